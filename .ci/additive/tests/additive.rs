//! The crate's functions, and with tpl-stream: a float stream refused by a build without the
//! float sampler, with a message that says why.

#[test]
fn the_matches_cover_the_built_in_variants() {
    assert!(tpl_additive_check::release_grade(tpl_mechanisms::SamplerKind::Discrete));
    assert!(tpl_additive_check::tests_staleness(tpl_mechanisms::SchemeKind::Bd));
    assert!(!tpl_additive_check::tests_staleness(tpl_mechanisms::SchemeKind::Uniform));
}

#[cfg(feature = "with-stream")]
#[test]
fn a_stream_of_the_float_sampler_is_refused_by_a_build_without_it() {
    use tpl_stream::{ConfigError, DurableStream, StreamConfig, StreamError};
    assert!(tpl_mechanisms::SamplerKind::from_name("float").is_none(), "the float sampler is built in");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    DurableStream::create(&path, &StreamConfig::new(tpl_mechanisms::SchemeKind::Bd, 1.0, 4)).unwrap();
    // What a build with the float sampler writes for `--sampler float`.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE params SET sampler = 'float'", []).unwrap();
    drop(conn);
    match DurableStream::open(&path) {
        Err(e @ StreamError::Config(ConfigError::SamplerLeftOut(_))) => {
            assert!(e.to_string().contains("float-not-release-grade"), "{e}");
        }
        other => panic!("{:?}", other.err()),
    }
}
