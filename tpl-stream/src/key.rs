//! The stream's key ([`docs/stream.md`](tpl_core::guide::stream) §2): 32 random bytes kept in a
//! file outside the stream, with which each step's counts are digested (HMAC-SHA-256), so that the
//! stream file alone tells nothing about the counts — only whether a retry brings the same ones.

use std::io::Write;
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use rand::TryRngCore;
use sha2::{Digest, Sha256};

use crate::error::{Result, StreamError};

/// The key of a stream: 32 bytes from the operating system's generator.
#[derive(Clone, PartialEq, Eq)]
pub struct StreamKey([u8; 32]);

impl std::fmt::Debug for StreamKey {
    /// Never prints the key itself, only its identifier.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StreamKey({})", self.id())
    }
}

/// Where a stream's key lives unless another file is named: `<stream>.key` beside it.
///
/// ```
/// use std::path::Path;
/// assert_eq!(tpl_stream::default_key_path(Path::new("/srv/s.db")), Path::new("/srv/s.db.key"));
/// ```
pub fn default_key_path(stream: &Path) -> PathBuf {
    let mut name = stream.as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

/// Where a key rotation writes the new key before the stream takes it: `<key>.new`.
pub fn rotation_file(key: &Path) -> PathBuf {
    let mut name = key.as_os_str().to_owned();
    name.push(".new");
    PathBuf::from(name)
}

impl StreamKey {
    /// A fresh key from the operating system's generator.
    ///
    /// # Errors
    /// [`StreamError::Key`] when the generator fails (`path` names the key file meant).
    pub fn generate(path: &Path) -> Result<Self> {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng
            .try_fill_bytes(&mut bytes)
            .map_err(|e| key_error(path, format!("the system's generator failed: {e}")))?;
        Ok(Self(bytes))
    }

    /// Reads the key file at `path`: 64 hexadecimal digits and an optional line end.
    ///
    /// # Errors
    /// [`StreamError::Key`]: missing, unreadable, or not a key.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read(path).map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                "missing: a push needs the stream's key to tell a retry from a conflict (`tpl stream rekey` makes a new one)".to_string()
            } else {
                e.to_string()
            };
            key_error(path, why)
        })?;
        let text = text.strip_suffix(b"\n").unwrap_or(&text);
        let bad = || key_error(path, "not a stream key (64 hexadecimal digits)".into());
        if text.len() != 64 {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (b, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
            let hex = std::str::from_utf8(pair).map_err(|_| bad())?;
            *b = u8::from_str_radix(hex, 16).map_err(|_| bad())?;
        }
        Ok(Self(bytes))
    }

    /// Writes the key to a new file at `path`, readable and writable by its owner only
    /// (mode 0600 on Unix); an existing file is never overwritten.
    ///
    /// # Errors
    /// [`StreamError::KeyExists`], or [`StreamError::Key`] when the file cannot be written.
    pub fn write_new(&self, path: &Path) -> Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => StreamError::KeyExists { path: path.to_path_buf() },
            _ => key_error(path, e.to_string()),
        })?;
        let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        file.write_all(format!("{hex}\n").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| key_error(path, e.to_string()))
    }

    /// The key's public identifier, stored in the stream to recognise its key: the hex
    /// SHA-256 of the key (which tells nothing about a 256-bit random key).
    pub fn id(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"tpl-stream key id\0");
        h.update(self.0);
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// HMAC-SHA-256 under this key of a step's counts: the cell count as a little-endian u64,
    /// then each count's f64 bits, little-endian (−0 taken as 0). Without the key nobody can
    /// test a guess of the counts against it.
    pub fn digest(&self, counts: &[f64]) -> [u8; 32] {
        // HMAC pads a key to the hash's block (64 bytes) with zeros: the same key, padded here.
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.0);
        let mut mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
        mac.update(&(counts.len() as u64).to_le_bytes());
        for &c in counts {
            let c = if c == 0.0 { 0.0f64 } else { c };
            mac.update(&c.to_bits().to_le_bytes());
        }
        mac.finalize().into_bytes().into()
    }

    /// HMAC-SHA-256 under this key of what a stream keeps to save work — the leakage audit and
    /// the filter's state ([`docs/stream.md`](tpl_core::guide::stream) §1) — labelled by `what`,
    /// each of `parts` length-prefixed: only a holder of the key (a push) can make one that a
    /// push takes, so an edit of a kept state is ignored, never used.
    pub fn seal(&self, what: &str, parts: &[&[u8]]) -> [u8; 32] {
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.0);
        let mut mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
        mac.update(b"tpl-stream kept state\0");
        for part in std::iter::once(what.as_bytes()).chain(parts.iter().copied()) {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }
}

fn key_error(path: &Path, reason: String) -> StreamError {
    StreamError::Key { path: path.to_path_buf(), reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_written_reads_back_and_digests_depend_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let (path, key) = (dir.path().join("k"), StreamKey::generate(Path::new("k")).unwrap());
        key.write_new(&path).unwrap();
        assert_eq!(StreamKey::read(&path).unwrap(), key);
        assert!(matches!(key.write_new(&path), Err(StreamError::KeyExists { .. })));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let other = StreamKey::generate(&path).unwrap();
        assert_ne!(key.digest(&[1.0, 2.0]), other.digest(&[1.0, 2.0]));
        assert_eq!(key.digest(&[0.0]), key.digest(&[-0.0]));
        assert_ne!(key.digest(&[1.0, 2.0]), key.digest(&[2.0, 1.0]));
        assert_ne!(key.id(), other.id());
        assert_eq!(format!("{key:?}"), format!("StreamKey({})", key.id()));
        std::fs::write(&path, "zz").unwrap();
        assert!(matches!(StreamKey::read(&path), Err(StreamError::Key { .. })));
    }
}
