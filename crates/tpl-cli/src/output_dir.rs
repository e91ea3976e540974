//! Writing the files of the commands that produce folders (`simulate`, `estimate`, `demo`)
//! and charts: every failure names the path that could not be written. Only a command's
//! own `--out DIR` is created ([`create_dir`]); a file is never given missing parent folders
//! (a mistyped `--chart` path is an error, not a new folder).

use std::path::Path;

use crate::error::{CliError, Result};

/// Creates `dir` and its parents (a command's `--out DIR`).
pub fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| CliError::Write { path: dir.to_path_buf(), source })
}

/// Writes `text` to `path`, in a folder that must exist.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| CliError::Write { path: path.to_path_buf(), source })
}
