//! Flags and usage through the built binary: bad flag values and usage errors (exit 2, one
//! line on stderr naming the flag and value, nothing on stdout) and the examples in the help.

mod common;

use common::*;

// ---------------------------------------------------------------------------------------------
// Bad input: flag values
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_epsilon_for_leakage_and_supremum() {
    let d = Scratch::new("bad_epsilon");
    let m = d.file("ex4.csv", EXAMPLE4);
    for e in ["0", "-0.1", "-1", "inf", "NaN", "-inf"] {
        // clap reads a bare "-inf" as the short flag -i, so that one goes in the --flag=value form.
        let (flag, value) =
            if e == "-inf" { (format!("--epsilon={e}"), None) } else { ("--epsilon".into(), Some(e)) };
        let with = |mut args: Vec<&'static str>| -> Vec<String> {
            let mut v: Vec<String> = args.drain(..).map(String::from).collect();
            v.push(flag.clone());
            v.extend(value.map(String::from));
            v
        };
        for args in [
            with(vec!["leakage", "--horizon", "3"]),
            [
                vec!["leakage".to_string(), "--backward".into(), m.clone(), "--horizon".into(), "3".into()],
                with(vec![]),
            ]
            .concat(),
            [vec!["supremum".to_string(), "--matrix".into(), m.clone()], with(vec![])].concat(),
        ] {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            bad_input(&refs, &["--epsilon"], &[e]);
        }
    }
    usage_error(&["supremum", "--matrix", &m, "--epsilon", "-inf"]);
    usage_error(&["supremum", "--matrix", &m, "--epsilon", "abc"]);
    usage_error(&["leakage", "--epsilon", "abc", "--horizon", "3"]);
}

#[test]
fn bad_horizon_and_window() {
    let d = Scratch::new("bad_horizon_window");
    let b = d.file("b.txt", "0.1\n0.2\n0.3\n");
    bad_input(&["leakage", "--epsilon", "0.1", "--horizon", "0"], &["--horizon"], &["0"]);
    for w in ["0", "4", "100"] {
        bad_input(&["leakage", "--epsilon", "0.1", "--horizon", "3", "--window", w], &["--window"], &[w]);
        bad_input(&["leakage", "--budgets", &b, "--window", w], &["--window"], &[w]);
    }
    usage_error(&["leakage", "--epsilon", "0.1", "--horizon", "-1"]);
    usage_error(&["leakage", "--epsilon", "0.1", "--horizon", "2.5"]);
    usage_error(&["leakage", "--epsilon", "0.1", "--horizon", "3", "--window", "-1"]);
}

#[test]
fn bad_alpha() {
    let d = Scratch::new("bad_alpha");
    let m = d.file("ex4.csv", EXAMPLE4);
    for a in ["-1", "-0.5", "NaN", "inf"] {
        bad_input(&["loss", "--matrix", &m, "--alpha", a], &["--alpha"], &[a]);
        // A bad α among good ones is named too.
        bad_input(
            &["loss", "--matrix", &m, "--alpha", "1", "--alpha", a, "--alpha", "2"],
            &["--alpha"],
            &[a],
        );
    }
    // clap reads a bare "-inf" as the short flag -i; the --alpha=VALUE form reaches the check.
    bad_input(&["loss", "--matrix", &m, "--alpha=-inf"], &["--alpha"], &["-inf"]);
    usage_error(&["loss", "--matrix", &m, "--alpha", "-inf"]);
    usage_error(&["loss", "--matrix", &m, "--alpha", "one"]);
}

#[test]
fn bad_smoothing() {
    let d = Scratch::new("bad_smoothing");
    let m = d.file("ex4.csv", EXAMPLE4);
    for s in ["-1", "NaN", "inf"] {
        bad_input(&["loss", "--matrix", &m, "--alpha", "1", "--smoothing", s], &["--smoothing"], &[s]);
    }
}

#[test]
fn usage_errors_unknown_flags_subcommands_and_missing_flags() {
    let d = Scratch::new("usage_errors");
    let m = d.file("ex4.csv", EXAMPLE4);
    let b = d.file("b.txt", "0.1\n");
    // Unknown subcommand, no subcommand.
    usage_error(&["frobnicate"]);
    usage_error(&[]);
    // Unknown flags.
    usage_error(&["--bogus"]);
    usage_error(&["loss", "--matrix", &m, "--alpha", "1", "--bogus"]);
    usage_error(&["leakage", "--epsilon", "0.1", "--horizon", "3", "--bogus"]);
    usage_error(&["supremum", "--matrix", &m, "--epsilon", "0.1", "--bogus", "1"]);
    usage_error(&["demo", "--bogus"]);
    usage_error(&["loss", "--matrix", &m, "--alpha", "1", "--format", "yaml"]);
    // Missing required flags.
    usage_error(&["loss"]);
    usage_error(&["loss", "--alpha", "1"]);
    usage_error(&["loss", "--matrix", &m]);
    usage_error(&["loss", "--matrix"]);
    usage_error(&["supremum", "--matrix", &m]);
    usage_error(&["supremum", "--epsilon", "0.1"]);
    usage_error(&["leakage"]);
    usage_error(&["leakage", "--backward", &m]);
    usage_error(&["leakage", "--epsilon", "0.1"]);
    usage_error(&["leakage", "--horizon", "3"]);
    // --budgets conflicts with --epsilon/--horizon.
    usage_error(&["leakage", "--budgets", &b, "--epsilon", "0.1", "--horizon", "3"]);
    // Stray positional argument.
    usage_error(&["loss", &m, "--alpha", "1"]);
}

// ---------------------------------------------------------------------------------------------
// Help
// ---------------------------------------------------------------------------------------------

/// True when `help` shows an example: an "Example" heading and an invocation of `tpl <cmd>`.
fn shows_example(help: &str, invocation: &str) -> bool {
    help.to_lowercase().contains("example") && help.contains(invocation)
}

#[test]
fn top_level_help_mentions_an_example() {
    for flag in ["--help", "-h"] {
        let run = tpl(&[flag]);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        assert!(
            shows_example(&run.stdout, "tpl leakage --"),
            "top-level help shows an example\n{}",
            run.describe()
        );
        for cmd in ["loss", "leakage", "supremum", "demo"] {
            assert!(run.stdout.contains(cmd), "top-level help lists {cmd}\n{}", run.describe());
        }
    }
    let run = tpl(&["--version"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.starts_with("tpl "), "{}", run.describe());
}

#[test]
fn leakage_help_mentions_an_example() {
    let run = tpl(&["leakage", "--help"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    for flag in ["--backward", "--forward", "--epsilon", "--horizon", "--budgets", "--window", "--format"] {
        assert!(run.stdout.contains(flag), "leakage help documents {flag}\n{}", run.describe());
    }
    assert!(
        shows_example(&run.stdout, "tpl leakage --"),
        "`tpl leakage --help` must show an example invocation\n{}",
        run.describe()
    );
}

/// Two schemes of the literature are called PBA: the help of every command that takes a
/// scheme names the one `tpl` implements, and says which it is not.
#[test]
fn the_help_names_the_pba_it_implements() {
    for command in [&["release", "--help"][..], &["stream", "init", "--help"], &["compare", "--help"]] {
        let run = tpl(command);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        let text = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains("Hemkumar et al. 2021"), "{command:?} names the PBA paper\n{}", run.describe());
    }
    let run = tpl(&["release", "--help"]);
    let text = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("not the personalized one of Du et al. 2025"), "{}", run.describe());
}

/// Help texts are for people: no rustdoc link syntax of the doc comments they come from.
#[test]
fn no_help_text_carries_rustdoc_links() {
    let commands = [
        "loss",
        "leakage",
        "supremum",
        "allocate",
        "release",
        "postprocess",
        "simulate",
        "estimate",
        "compare",
        "demo",
        "stream",
    ];
    let mut all: Vec<Vec<&str>> = commands.iter().map(|c| vec![*c]).collect();
    all.extend(["init", "push", "status", "export", "rekey", "report"].iter().map(|s| vec!["stream", *s]));
    all.push(vec![]);
    for words in all {
        for flag in ["--help", "-h"] {
            let mut args = words.clone();
            args.push(flag);
            let run = tpl_ok(&args);
            assert!(!run.stdout.contains("](tpl_") && !run.stdout.contains("[`"), "{}", run.describe());
        }
    }
}
