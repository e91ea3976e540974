//! The readers of user stream files against `tpl-core`: the dense stream, the counts and
//! the errors of [`UserStream::from_records`] and [`TransitionCounts::from_steps`] on the
//! records the file holds.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tpl_core::{CoreError, StepRange, TransitionCounts, UserStream};

use super::scan::BLOCK;
use super::*;

/// A file of `text` in a fresh temporary folder (removed when dropped).
struct File(#[allow(dead_code)] tempfile::TempDir, PathBuf);

impl File {
    fn new(text: &[u8]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        std::fs::write(&path, text).unwrap();
        Self(dir, path)
    }
}

fn parse(text: &str) -> Result<UserStream> {
    read_user_stream(&File::new(text.as_bytes()).1)
}

/// The first bucket and the spacing of the buckets.
type Buckets = (u64, u64);

/// A stream's counts, cell ids and buckets.
type Counted = (TransitionCounts, Vec<u64>, Buckets);

/// The counts, cell ids and buckets of `text` counted as read, or the error message.
fn counted(text: &[u8], range: StepRange) -> std::result::Result<Counted, String> {
    counted_file(&File::new(text).1, range)
}

fn counted_file(path: &Path, range: StepRange) -> std::result::Result<Counted, String> {
    let c = count_user_stream(path, range).map_err(|e| e.to_string())?;
    let (ids, buckets) = (c.cell_ids.clone(), c.buckets);
    Ok((c.counts(path).map_err(|e| e.to_string())?, ids, buckets))
}

#[test]
fn round_trip() {
    let states = vec![vec![0, 2], vec![1, 2]];
    let s = parse(&stream_text(&states)).unwrap();
    assert_eq!(s.states, states);
    assert_eq!(s.cell_ids, vec![0, 1, 2]);
    assert!(s.ids_are_indices());
    let (counts, _, buckets) = counted(stream_text(&states).as_bytes(), StepRange::ALL).unwrap();
    assert_eq!((counts, buckets), (TransitionCounts::from_paths(3, &states).unwrap(), (0, 1)));
    let text = stream_text(&states);
    assert_eq!(parse_user_stream(Path::new("s.csv"), &text).unwrap(), s);
}

#[test]
fn largest_ids_are_labels_not_sizes() {
    let max = u64::MAX;
    let s = parse(&format!("{HEADER}\n{max},{max},0\n")).unwrap();
    assert_eq!((s.states.clone(), s.cell_ids.clone()), (vec![vec![0]], vec![0]));
    assert_eq!(counted(format!("{HEADER}\n{max},{max},0\n").as_bytes(), StepRange::ALL).unwrap().2, (max, 1));
    let text = format!("{HEADER}\n7,1000000000000,99999\n7,5,{}\n9,5,3\n9,1000000000000,99999\n", max - 1);
    let s = parse(&text).unwrap();
    assert_eq!(s.cell_ids, vec![3, 99999, max - 1]);
    // Users in id order: 5, then 10¹².
    assert_eq!(s.states, vec![vec![2, 1], vec![0, 1]]);
    assert!(!s.ids_are_indices());
    let (counts, ids, buckets) = counted(text.as_bytes(), StepRange::ALL).unwrap();
    assert_eq!((ids, buckets), (s.cell_ids.clone(), (7, 2)));
    assert_eq!(counts, TransitionCounts::from_paths(3, &s.states).unwrap());
}

#[test]
fn gaps_and_duplicates_are_named() {
    let e = parse(&format!("{HEADER}\n0,0,1\n0,2,1\n1,0,1\n")).err().unwrap().to_string();
    assert!(e.contains("user 2 never appears in bucket 1"), "{e}");
    let e = parse(&format!("{HEADER}\n0,0,1\n1,0,1\n3,0,1\n")).err().unwrap().to_string();
    assert!(e.contains("bucket 2 never appears"), "{e}");
    let e = parse(&format!("{HEADER}\n0,0,1\n0,0,1\n1,0,0\n1,1,0\n")).err().unwrap().to_string();
    assert!(e.contains(":3:") && e.contains("user 0 appears twice in bucket 0"), "{e}");
    let e = parse("t,u,c\n0,0,1\n").err().unwrap().to_string();
    assert!(e.contains(":1:"), "{e}");
    let e = parse(&format!("{HEADER}\n0,0,-1\n")).err().unwrap().to_string();
    assert!(e.contains(":2:") && e.contains("\"-1\""), "{e}");
    let e = parse(&format!("{HEADER}\n0,0,18446744073709551616\n")).err().unwrap().to_string();
    assert!(e.contains(":2:") && e.contains("18446744073709551616"), "{e}");
    let e = parse(&format!("{HEADER}\n")).err().unwrap().to_string();
    assert!(e.ends_with("s.csv: no data rows (empty stream)"), "{e}");
}

#[test]
fn more_cells_than_supported_are_refused_by_both_readers() {
    let mut text = format!("{HEADER}\n");
    for u in 0..=MAX_CELLS {
        text.push_str(&format!("0,{u},{u}\n"));
    }
    let file = File::new(text.as_bytes());
    let e = read_user_stream(&file.1).unwrap_err();
    assert!(matches!(e, IoError::TooManyCells { cells, .. } if cells == MAX_CELLS + 1), "{e}");
    let want =
        format!("{}: 4097 distinct cells: at most 4096 are supported (dense matrices)", file.1.display());
    assert_eq!(e.to_string(), want);
    assert_eq!(counted_file(&file.1, StepRange::ALL).unwrap_err(), want);
}

#[test]
fn a_user_who_comes_late_is_missing_from_the_first_bucket() {
    // In bucket order, user 1 first shows up in bucket 2: missing from bucket 0, which
    // comes before bucket 1, where user 0 is missing too.
    let text = format!("{HEADER}\n0,0,0\n1,1,0\n2,0,0\n2,1,0\n");
    for e in [parse(&text).err().unwrap().to_string(), counted(text.as_bytes(), StepRange::ALL).unwrap_err()]
    {
        assert!(e.contains("user 1 never appears in bucket 0"), "{e}");
    }
    // A duplicate before the first missing pair is named first, with its second line.
    let text = format!("{HEADER}\n0,0,0\n0,0,1\n0,0,1\n1,0,0\n1,5,0\n0,5,0\n2,0,0\n");
    for e in [parse(&text).err().unwrap().to_string(), counted(text.as_bytes(), StepRange::ALL).unwrap_err()]
    {
        assert!(e.ends_with(":3: user 0 appears twice in bucket 0"), "{e}");
    }
}

#[test]
fn a_line_past_the_read_block_and_a_file_without_a_last_line_end_are_read() {
    // One comment line longer than a block, then a last row with no line end.
    let long = format!("# {}\n", "x".repeat(3 * BLOCK));
    let text = format!("\u{feff}{HEADER}\r\n{long}0,0,1\r\n1,0,2");
    let s = parse(&text).unwrap();
    assert_eq!(s.states, vec![vec![0], vec![1]]);
    assert_eq!(counted(text.as_bytes(), StepRange::ALL).unwrap().1, vec![1, 2]);
    let e = counted(b"timestamp_bucket,user_id,location_cell\n0,0,\xff\n", StepRange::ALL).unwrap_err();
    assert!(e.ends_with(":2: byte 5 of the line is not UTF-8 text"), "{e}");
}

/// How a stream file is written: the rows in bucket order or not, a byte-order mark or
/// not, and the style of each line (spaces, signs, quotes, CRLF, comments, errors).
#[derive(Debug, Clone)]
struct Layout {
    sorted: bool,
    bom: bool,
    order: Vec<usize>,
    styles: Vec<u8>,
}

/// A generated stream file: its text, its records (bucket, user, cell) with the line of
/// each in file order, and the line of its first malformed row, if any.
#[derive(Debug, Clone)]
struct Generated {
    text: String,
    records: Vec<(u64, u64, u64)>,
    lines: Vec<usize>,
    malformed: Option<usize>,
}

/// A stream file: every (bucket, user) row of `states`, some given twice (in another cell)
/// and some dropped, laid out as `layout` says.
fn stream_file(
    ids: (u64, u64, &[u64], &[u64]),
    states: &[Vec<usize>],
    edits: (Vec<usize>, Vec<usize>),
    layout: &Layout,
) -> Generated {
    let (first, spacing, users, cells) = ids;
    let mut rows: Vec<(u64, u64, u64)> = Vec::new();
    for (t, step) in states.iter().enumerate() {
        for (u, &c) in step.iter().enumerate() {
            rows.push((first + spacing * t as u64, users[u], cells[c]));
        }
    }
    let (drops, twice) = edits;
    for k in twice {
        let (b, u, c) = rows[k % rows.len()];
        let other = cells.iter().position(|&id| id == c).map_or(0, |i| (i + 1) % cells.len());
        rows.push((b, u, cells[other]));
    }
    for k in drops {
        if rows.len() > 1 {
            rows.remove(k % rows.len());
        }
    }
    let mut rows: Vec<(u64, u64, u64)> =
        layout.order.iter().filter(|&&i| i < rows.len()).map(|&i| rows[i]).collect();
    if layout.sorted {
        rows.sort_by_key(|r| r.0);
    }
    let mut g = Generated {
        text: String::from(if layout.bom { "\u{feff}" } else { "" }),
        records: rows.clone(),
        lines: Vec::new(),
        malformed: None,
    };
    g.text.push_str(HEADER);
    g.text.push('\n');
    let mut line = 1;
    for (k, &(b, u, c)) in rows.iter().enumerate() {
        let style = layout.styles.get(k).copied().unwrap_or(0);
        let text = match style {
            1 => format!(" {b} ,\t{u},{c} \r\n"),
            2 => format!("+{b},{u},{c}\n"),
            3 => format!("{b},\"{u}\",{c}\n"),
            4 => format!("# a comment\n\n   \n{b},{u},{c}\n"),
            5 => format!("{b},{u},{c},\n"),
            6 => format!("{b},{u}x,{c}\n"),
            _ => format!("{b},{u},{c}\n"),
        };
        line += text.matches('\n').count();
        g.lines.push(line);
        if style >= 5 && g.malformed.is_none() {
            g.malformed = Some(line);
        }
        g.text.push_str(&text);
    }
    g
}

/// Streams of up to 5 buckets, 3 users and 4 cells, ids from both ends of the range, up to
/// 3 rows dropped and 2 given twice, laid out in every way.
fn streams() -> impl Strategy<Value = Generated> {
    (1usize..6, 1usize..4, 1usize..5).prop_flat_map(|(steps, users, cells)| {
        let states = prop::collection::vec(prop::collection::vec(0..cells, users), steps);
        let ids = (
            prop::sample::select(vec![0u64, 7, u64::MAX - 40]),
            prop::sample::select(vec![1u64, 3]),
            prop::sample::subsequence(vec![0u64, 1, 2, 5, 1_000_000_000_000, u64::MAX], users).prop_shuffle(),
            prop::sample::subsequence(vec![0u64, 1, 2, 3, 99_999, u64::MAX - 1], cells),
        );
        let rows = steps * users + 2;
        let edit = |most: usize| prop_oneof![Just(Vec::new()), prop::collection::vec(0..rows, 1..=most)];
        let edits = (edit(3), edit(2));
        // Mostly plain rows; one in 50 lines a malformed one.
        let style = prop_oneof![40 => Just(0u8), 8 => 1u8..5, 2 => 5u8..7];
        let styles = prop::collection::vec(style, rows);
        let layout =
            (any::<bool>(), prop::bool::weighted(0.2), Just((0..rows).collect()).prop_shuffle(), styles)
                .prop_map(|(sorted, bom, order, styles)| Layout { sorted, bom, order, styles });
        (states, ids, edits, layout).prop_map(|(states, ids, edits, layout)| {
            let (first, spacing, users, cells): (u64, u64, Vec<u64>, Vec<u64>) = ids;
            let states: Vec<Vec<usize>> = states;
            stream_file((first, spacing, &users, &cells), &states, edits, &layout)
        })
    })
}

/// What `tpl-core` makes of the records of `g`, with the error as the readers word it
/// (a repeated pair named by the line of its record).
fn expected(path: &Path, g: &Generated) -> std::result::Result<UserStream, String> {
    UserStream::from_records(&g.records).map_err(|e| {
        let line = match e {
            CoreError::StreamDuplicate { record, .. } => g.lines[record],
            _ => 0,
        };
        IoError::core(path, line, e).to_string()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    /// Both readers give what `tpl-core` makes of the records the file holds: the dense
    /// stream and its error, and the counts of [`TransitionCounts::from_steps`] in any step
    /// range; a malformed row is named by its line before anything else.
    #[test]
    fn both_readers_agree_with_tpl_core_on_the_records(
        g in streams(),
        a in 1usize..7,
        b in 1usize..7,
        open in 0usize..4,
    ) {
        let file = File::new(g.text.as_bytes());
        let (a, b) = (a.min(b), a.max(b));
        let range = StepRange::new((open & 1 == 0).then_some(a), (open & 2 == 0).then_some(b)).unwrap();
        let held = read_user_stream(&file.1).map_err(|e| e.to_string());
        let got = counted_file(&file.1, range);
        if let Some(line) = g.malformed {
            let at = format!("s.csv:{line}: ");
            prop_assert!(held.as_ref().unwrap_err().contains(&at), "{:?}", held);
            prop_assert!(got.as_ref().unwrap_err().contains(&at), "{:?}", got);
            return Ok(());
        }
        let want = expected(&file.1, &g);
        prop_assert_eq!(&held, &want);
        match want {
            Err(e) => prop_assert_eq!(got.unwrap_err(), e),
            Ok(stream) => {
                let (counts, ids, buckets) = got.unwrap();
                prop_assert_eq!((ids, buckets), (stream.cell_ids.clone(), stream.buckets));
                if let Ok(steps) = range.resolve(stream.states.len()) {
                    let want = TransitionCounts::from_steps(stream.cells(), &stream.states, steps).unwrap();
                    prop_assert_eq!(counts, want);
                }
            }
        }
    }
}
