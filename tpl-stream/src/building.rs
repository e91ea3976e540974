//! Creating a stream atomically ([`docs/stream.md`](tpl_core::guide::stream) §1): the file is built
//! under a temporary name beside its final path and linked into place only when complete, so that a
//! process killed during `init` leaves no half-made stream where the stream should be.

use std::path::{Path, PathBuf};

use crate::error::{Result, StreamError};
use crate::store::companion;

/// A stream file being built: a fresh temporary file in the target's folder (mode 0600 on
/// Unix), removed with its companions when dropped unless [`Building::publish`] linked it.
/// Its builder holds an exclusive lock on it, so that a later `init` of the same target can
/// tell the file of a builder that was killed (no lock held) from one still at work.
pub(crate) struct Building {
    temporary: PathBuf,
    target: PathBuf,
    /// The open temporary file, locked while this builder lives.
    _lock: std::fs::File,
}

impl Building {
    /// Creates the temporary file for `target`.
    ///
    /// # Errors
    /// [`StreamError::CannotCreate`] when the folder cannot be written.
    pub fn new(target: &Path) -> Result<Self> {
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let temporary = target.with_file_name(format!(".{name}.{}-{nanos}.building", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let lock = options.open(&temporary).map_err(|e| StreamError::CannotCreate {
            path: target.to_path_buf(),
            reason: format!("its folder cannot be written ({e})"),
        })?;
        // Held until this builder is dropped; where the file system has no locks, the stale
        // files of killed builders are left, as before.
        let _ = lock.try_lock();
        remove_stale(target, &name, &temporary);
        Ok(Self { temporary, target: target.to_path_buf(), _lock: lock })
    }

    /// The temporary file.
    pub fn path(&self) -> &Path {
        &self.temporary
    }

    /// Makes the complete file durable and puts it at the target path, which must not exist
    /// (a hard link, which fails on an existing name; where the file system has none, a
    /// rename after a check).
    ///
    /// # Errors
    /// [`StreamError::Exists`] when the target appeared meanwhile; a failed write.
    pub fn publish(self) -> Result<()> {
        let failed =
            |e: std::io::Error| StreamError::ReadOnly { path: self.target.clone(), reason: e.to_string() };
        std::fs::File::open(&self.temporary).and_then(|f| f.sync_all()).map_err(failed)?;
        match std::fs::hard_link(&self.temporary, &self.target) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StreamError::Exists { path: self.target.clone() });
            }
            Err(_) if std::fs::symlink_metadata(&self.target).is_ok() => {
                return Err(StreamError::Exists { path: self.target.clone() });
            }
            Err(_) => std::fs::rename(&self.temporary, &self.target).map_err(failed)?,
        }
        // The new name is durable once its folder is (Unix; elsewhere the rename is).
        #[cfg(unix)]
        if let Some(folder) = self.target.parent().filter(|f| !f.as_os_str().is_empty()) {
            std::fs::File::open(folder).and_then(|f| f.sync_all()).map_err(failed)?;
        }
        Ok(())
    }
}

/// Removes the temporary files of earlier builds of `target` (`.{name}.<pid>-<time>.building`
/// and their `-wal`/`-shm`) whose builder is gone — the file's lock is free — but `own`.
fn remove_stale(target: &Path, name: &str, own: &Path) {
    let folder = target.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    let prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        let path = entry.path();
        // `<pid>-<time>` between the target's name and `.building`: this target's builds only.
        let stamp = file.strip_prefix(&prefix).and_then(|rest| rest.strip_suffix(".building"));
        let ours = stamp.and_then(|s| s.split_once('-')).is_some_and(|(pid, time)| {
            [pid, time].iter().all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        });
        if !ours || path == own {
            continue;
        }
        let stale = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .is_ok_and(|f| f.try_lock().is_ok());
        if stale {
            for stale in [companion(&path, "-wal"), companion(&path, "-shm"), path] {
                let _ = std::fs::remove_file(stale);
            }
        }
    }
}

impl Drop for Building {
    fn drop(&mut self) {
        for file in
            [self.temporary.clone(), companion(&self.temporary, "-wal"), companion(&self.temporary, "-shm")]
        {
            let _ = std::fs::remove_file(file);
        }
    }
}
