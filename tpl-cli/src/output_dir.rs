//! Writing the files of the commands that produce folders (`simulate`, `estimate`, `demo`)
//! and charts: every failure names the path that could not be written. Only a command's
//! own `--out DIR` is created ([`create_dir`]); a file is never given missing parent folders
//! (a mistyped `--chart` path is an error, not a new folder).

use std::path::Path;

use crate::error::{CliError, Result};

/// Creates `dir` and its parents (a command's `--out DIR`); a path that exists and is not a
/// folder is named as such (the system would say "File exists").
pub fn create_dir(dir: &Path) -> Result<()> {
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(CliError::Usage(format!(
            "--out {}: exists and is not a folder (the output is a folder of files)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|source| CliError::Write { path: dir.to_path_buf(), source })
}

/// Writes `text` to `path`, in a folder that must exist.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    Ok(tpl_report::write_file(path, text)?)
}
