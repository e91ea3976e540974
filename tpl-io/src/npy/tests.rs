use super::*;

fn path() -> &'static Path {
    Path::new("a.npy")
}

/// A version 1.0 file with `header` (padded as NumPy pads it) and `data`.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    let unpadded = MAGIC.len() + 4 + h.len() + 1;
    h.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    h.push('\n');
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

fn error(bytes: &[u8]) -> String {
    parse_npy(path(), bytes).unwrap_err().to_string()
}

#[test]
fn floats_and_integers_round_trip() {
    let values = [0.1, -2.5, 1e300, f64::MIN_POSITIVE, 0.0, 7.0];
    let bytes = npy_f64(&[2, 3], &values);
    assert_eq!(bytes.len() % 64, 48, "header padded to 64 bytes, then 48 bytes of data");
    let array = parse_npy(path(), &bytes).unwrap();
    assert_eq!(array.shape, vec![2, 3]);
    assert_eq!(array.data, NpyData::F64(values.to_vec()));
    assert_eq!(array.to_rows(path()).unwrap(), vec![values[..3].to_vec(), values[3..].to_vec()]);

    let counts = [3i64, -1, i64::MAX, 0];
    let array = parse_npy(path(), &npy_i64(&[4], &counts)).unwrap();
    assert_eq!((array.shape.clone(), array.data.clone()), (vec![4], NpyData::I64(counts.to_vec())));
    assert_eq!(
        array.to_f64(path()).unwrap_err().to_string(),
        "a.npy: value 3: integer 9223372036854775807 is beyond ±2^53 = 9007199254740992, the largest integers \
         read (beyond it not every integer is a double, so none is taken rather than some rounded)"
    );
}

/// Regression: 2⁶⁰ and −2⁶³ were refused as "not exactly representable as a float", which
/// they are; what they exceed is 2⁵³, the bound of every integer read. 2⁵³ itself is taken.
#[test]
fn integers_beyond_two_to_the_53_are_refused_as_beyond_that_bound() {
    let array = parse_npy(path(), &npy_i64(&[2, 2], &[1, 1 << 53, -(1 << 53), 1 << 60])).unwrap();
    let e = array.to_f64(path()).unwrap_err().to_string();
    assert!(e.starts_with("a.npy: row 2, column 2: integer 1152921504606846976 is beyond ±2^53"), "{e}");
    let array = parse_npy(path(), &npy_i64(&[3], &[0, i64::MIN, 1])).unwrap();
    let e = array.to_f64(path()).unwrap_err().to_string();
    assert!(e.starts_with("a.npy: value 2: integer -9223372036854775808 is beyond ±2^53"), "{e}");
    assert!(!e.contains("representable"), "{e}");
    let array = parse_npy(path(), &npy_i64(&[2], &[1 << 53, -(1 << 53)])).unwrap();
    assert_eq!(array.to_f64(path()).unwrap(), vec![9007199254740992.0, -9007199254740992.0]);
}

/// Regression: a header field of thousands of characters was echoed whole.
#[test]
fn a_huge_header_field_is_echoed_cut() {
    let header = |shape: &str, descr: &str| {
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}")
    };
    let long = "9".repeat(5000);
    let e = error(&file(&header(&format!("({long},)"), "<f8"), &[]));
    assert!(e.contains(&format!("dimension `{}…` is not a whole number", "9".repeat(40))), "{e}");
    assert!(e.chars().count() < 200, "{e}");
    let e = error(&file(&header("(2,)", &format!("<{long}")), &[0; 16]));
    assert!(e.contains(&format!("type '<{}…'", "9".repeat(39))) && e.chars().count() < 200, "{e}");
}

#[test]
fn numpy_headers_in_their_variants_are_read() {
    // Keys in another order, double quotes, no trailing comma, a Python 2 long.
    let data: Vec<u8> = [1.5f64, 2.5].iter().flat_map(|v| v.to_le_bytes()).collect();
    for header in [
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
        "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<f8\"}",
        "{'fortran_order': False, 'shape': (2L,), 'descr': '=f8'}",
    ] {
        let array = parse_npy(path(), &file(header, &data)).unwrap();
        assert_eq!(array.data, NpyData::F64(vec![1.5, 2.5]), "{header}");
    }
    // Version 2.0: a four-byte header length.
    let mut v2 = MAGIC.to_vec();
    let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n";
    v2.extend_from_slice(&[2, 0]);
    v2.extend_from_slice(&(header.len() as u32).to_le_bytes());
    v2.extend_from_slice(header.as_bytes());
    v2.extend_from_slice(&data);
    assert_eq!(parse_npy(path(), &v2).unwrap().data, NpyData::F64(vec![1.5, 2.5]));
}

#[test]
fn every_type_and_byte_order_decodes() {
    let read = |descr: &str, data: &[u8]| {
        parse_npy(
            path(),
            &file(&format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,), }}"), data),
        )
        .unwrap()
        .data
    };
    assert_eq!(read("<f4", &[0, 0, 0xc0, 0x3f, 0, 0, 0x20, 0xc1]), NpyData::F64(vec![1.5, -10.0]));
    assert_eq!(read("|u1", &[255, 7]), NpyData::U64(vec![255, 7]));
    assert_eq!(read("|i1", &[255, 7]), NpyData::I64(vec![-1, 7]));
    assert_eq!(read(">i2", &[0xff, 0xfe, 0x01, 0x00]), NpyData::I64(vec![-2, 256]));
    assert_eq!(read("<u4", &[1, 0, 0, 0, 0, 0, 0, 0x80]), NpyData::U64(vec![1, 1 << 31]));
    assert_eq!(read("|b1", &[1, 0]), NpyData::I64(vec![1, 0]));
    assert_eq!(
        read(">f8", &[0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0]),
        NpyData::F64(vec![1.5, -2.0])
    );
}

#[test]
fn fortran_order_is_read_as_rows() {
    // [[1, 2, 3], [4, 5, 6]] stored column by column.
    let data: Vec<u8> = [1i64, 4, 2, 5, 3, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
    let array = parse_npy(path(), &file("{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }", &data))
        .unwrap();
    assert_eq!(array.data, NpyData::I64(vec![1, 2, 3, 4, 5, 6]));
}

#[test]
fn malformed_files_are_named_and_nothing_is_allocated_from_the_header() {
    assert!(error(b"PK\x03\x04").contains("not a .npy file"));
    assert!(error(b"\x93NUMPY\x01").contains("truncated"));
    assert!(error(b"\x93NUMPY\x09\x00").contains("version 9"));
    let header = |shape: &str, descr: &str| {
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}")
    };
    // A shape of 10¹⁸ values and 16 bytes of data: refused by length, before any allocation.
    let e = error(&file(&header("(1000000000, 1000000000)", "<f8"), &[0; 16]));
    assert!(e.contains("a.npy") && e.contains("needs") && e.contains("the file has 16"), "{e}");
    assert!(error(&file(&header("(18446744073709551615, 2)", "<f8"), &[])).contains("more than 2⁶⁴"));
    assert!(error(&file(&header("(2, 2, 2)", "<f8"), &[0; 64])).contains("3 dimensions"));
    assert!(error(&file(&header("(0, 5)", "<f8"), &[])).contains("empty"));
    assert!(error(&file(&header("(2,)", "<c16"), &[0; 32])).contains("type '<c16'"));
    assert!(error(&file(&header("(2,)", "<M8"), &[0; 16])).contains("type '<M8'"));
    assert!(error(&file("{'descr': '<f8', 'shape': (2,), }", &[0; 16])).contains("no 'fortran_order'"));
    assert!(
        error(&file("{'descr': '<f8', 'fortran_order': 1, 'shape': (2,)}", &[0; 16]))
            .contains("True or False")
    );
}

#[test]
fn only_npy_paths_are_npy() {
    assert!(is_npy(Path::new("x/counts.npy")) && is_npy(Path::new("M.NPY")));
    assert!(!is_npy(Path::new("counts.csv")) && !is_npy(Path::new("npy")) && !is_npy(Path::new("-")));
}

#[test]
fn a_matrix_reads_from_npy_as_from_text() {
    let dir = tempfile::tempdir().unwrap();
    let (npy, csv) = (dir.path().join("m.npy"), dir.path().join("m.csv"));
    std::fs::write(&npy, npy_f64(&[2, 2], &[0.9, 0.1, 0.25, 0.75])).unwrap();
    std::fs::write(&csv, "0.9,0.1\n0.25,0.75\n").unwrap();
    assert_eq!(crate::read_matrix(&npy, false).unwrap(), crate::read_matrix(&csv, false).unwrap());
    std::fs::write(&npy, npy_f64(&[4], &[0.9, 0.1, 0.25, 0.75])).unwrap();
    assert!(crate::read_matrix(&npy, false).unwrap_err().to_string().contains("two-dimensional"));
    std::fs::write(&npy, npy_f64(&[2, 2], &[0.9, 0.2, 0.25, 0.75])).unwrap();
    assert!(crate::read_matrix(&npy, false).unwrap_err().to_string().contains("m.npy"));
}
