//! Writing the files of the commands that produce folders (`simulate`, `estimate`, `demo`)
//! and charts: every failure names the path that could not be written.

use std::path::Path;

use crate::error::{CliError, Result};

/// Creates `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| CliError::Write { path: dir.to_path_buf(), source })
}

/// Writes `text` to `path`, creating the folder it is in when that is missing.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir)?;
    }
    std::fs::write(path, text).map_err(|source| CliError::Write { path: path.to_path_buf(), source })
}
