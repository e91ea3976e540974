//! How a stream is created or opened ([`StreamOptions`], in the manner of
//! `std::fs::OpenOptions`): where its key is, and the application's scheme and mechanism
//! ([`docs/plugins.md`](tpl_core::guide::plugins)).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tpl_mechanisms::{MechanismBuilder, NoiseSource, SchemeBuilder, SchemeKind};

use crate::config::{SchemeChoice, StreamConfig};
use crate::error::{ConfigError, Result, StreamError};
use crate::key::default_key_path;
use crate::stream::DurableStream;

/// What gives each push a fresh noise source.
pub(crate) type NoiseMaker = Box<dyn Fn() -> Box<dyn NoiseSource + Send> + Send>;

/// The application's scheme and mechanism a stream is built with.
#[derive(Clone, Default)]
pub(crate) struct Plugins {
    scheme: Option<Arc<dyn SchemeBuilder>>,
    mechanism: Option<Arc<dyn MechanismBuilder>>,
}

impl Plugins {
    /// The application's scheme builder, if any.
    pub fn scheme(&self) -> Option<&dyn SchemeBuilder> {
        self.scheme.as_deref()
    }

    /// The application's mechanism builder, if any.
    pub fn mechanism(&self) -> Option<&dyn MechanismBuilder> {
        self.mechanism.as_deref()
    }
}

/// Options for creating or opening a durable stream: the key file (default
/// [`default_key_path`], `<path>.key`), a scheme of the application's
/// ([`StreamOptions::scheme`]) and a mechanism of the application's
/// ([`StreamOptions::mechanism`]). [`DurableStream::create`] and [`DurableStream::open`] are
/// the shortcuts with none.
///
/// A stream of a custom scheme or mechanism stores its name; every process that opens it
/// passes the same builders, and the stream rebuilds the scheme and restores its recorded
/// steps into it. The mechanism is wrapped in the stream's guard: every draw is admitted by
/// the stream's checks first and recorded in its ledger, whoever wrote the mechanism.
///
/// ```
/// use std::sync::Arc;
/// use tpl_mechanisms::{Bd, SchemeBuilder, scheme_builder};
/// use tpl_stream::{StreamConfig, StreamOptions};
/// let dir = std::env::temp_dir().join(format!("tpl-options-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("mine.db");
/// let mine: Arc<dyn SchemeBuilder> = Arc::new(scheme_builder("my-bd", |p, _, m| Ok(Box::new(Bd::new(p, m)))));
/// let options = StreamOptions::new().key(dir.join("mine.key")).scheme(Arc::clone(&mine));
/// options.create(&path, &StreamConfig::new(&*mine, 1.0, 10))?;
/// let mut stream = options.open(&path)?;
/// assert!(stream.push(Some(1), &[40.0, 2.0])?.record.published);
/// assert_eq!(stream.config().scheme.name(), "my-bd");
/// # drop(stream);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct StreamOptions {
    key: Option<PathBuf>,
    plugins: Plugins,
    noise: Option<Arc<dyn Fn() -> Box<dyn NoiseSource + Send> + Send + Sync>>,
}

impl StreamOptions {
    /// No options: the key beside the stream, the built-in schemes and mechanism.
    pub fn new() -> Self {
        Self::default()
    }

    /// The stream's key in the file `key` rather than at [`default_key_path`] (keep it apart
    /// from the stream, e.g. on another volume: [`docs/stream.md`](tpl_core::guide::stream) §2).
    #[must_use]
    pub fn key(mut self, key: impl Into<PathBuf>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The application's scheme (an `Arc` of one too): a stream whose config names it
    /// ([`SchemeChoice::Custom`] of the same name, e.g. `StreamConfig::new(&*builder, …)`)
    /// is created and opened with it. Its name may not be a built-in scheme's.
    #[must_use]
    pub fn scheme(mut self, scheme: impl SchemeBuilder + 'static) -> Self {
        self.plugins.scheme = Some(Arc::new(scheme));
        self
    }

    /// The application's mechanism (an `Arc` of one too), which the scheme releases through in place of the
    /// built-in Laplace mechanism, over the stream's sampler (its name is stored; it may not be
    /// `laplace`).
    #[must_use]
    pub fn mechanism(mut self, mechanism: impl MechanismBuilder + 'static) -> Self {
        self.plugins.mechanism = Some(Arc::new(mechanism));
        self
    }

    /// Pushes draw from `noise()` instead of the operating system (tests: scripted noise).
    /// Not for releases.
    #[cfg(feature = "test-util")]
    #[must_use]
    pub fn noise(mut self, noise: impl Fn() -> Box<dyn NoiseSource + Send> + Send + Sync + 'static) -> Self {
        self.noise = Some(Arc::new(noise));
        self
    }

    fn key_path(&self, path: &Path) -> PathBuf {
        self.key.clone().unwrap_or_else(|| default_key_path(path))
    }

    /// Creates the stream file at `path` with `config` and a new key in the key file
    /// ([`docs/stream.md`](tpl_core::guide::stream) §1–2). Both files are readable and writable
    /// by their owner only (mode 0600 on Unix). The stream is built in a temporary file beside
    /// `path` and linked into place when complete, so a process killed meanwhile leaves no
    /// stream behind; the key is written before the stream appears. With a mechanism of the
    /// application's, `config.mechanism` is set to its name (it must be unset or the same).
    ///
    /// # Errors
    /// [`StreamError::Config`] for parameters that make no stream (nothing is created) —
    /// among them parameters under which a step could never be released, and a custom scheme
    /// or mechanism named like a built-in one; [`StreamError::NeedsScheme`] or
    /// [`StreamError::NeedsMechanism`] when `config` names a scheme or mechanism these options
    /// do not hold; [`StreamError::SchemeSpend`] for a scheme whose first steps report
    /// another spend than their draws; [`StreamError::Plan`], [`StreamError::Exists`],
    /// [`StreamError::KeyExists`], [`StreamError::NoFolder`], or a file that cannot be
    /// written.
    pub fn create(&self, path: &Path, config: &StreamConfig) -> Result<()> {
        let built_in = |name: &str| StreamError::Config(ConfigError::CustomNamedBuiltIn(name.to_owned()));
        if let Some(scheme) = self.plugins.scheme()
            && SchemeKind::from_name(scheme.name()).is_some()
        {
            return Err(built_in(scheme.name()));
        }
        // The config is copied (matrices and all) only to record an application's mechanism.
        let mut config = std::borrow::Cow::Borrowed(config);
        if let Some(mechanism) = self.plugins.mechanism() {
            let name = mechanism.name();
            if name == tpl_mechanisms::Laplace.name() {
                return Err(built_in(name));
            }
            match &config.mechanism {
                Some(named) if named == name => {}
                Some(named) => {
                    return Err(StreamError::NeedsMechanism {
                        name: named.clone(),
                        given: Some(name.to_owned()),
                    });
                }
                None => config.to_mut().mechanism = Some(name.to_owned()),
            }
        }
        if let SchemeChoice::Custom(name) = &config.scheme
            && self.plugins.scheme().is_none_or(|s| s.name() != name)
        {
            let given = self.plugins.scheme().map(|s| s.name().to_owned());
            return Err(StreamError::NeedsScheme { name: name.clone(), given });
        }
        DurableStream::create_inner(path, &config, &self.key_path(path), &self.plugins)
    }

    /// Opens the existing stream at `path` for pushing and reading; every push draws from a
    /// fresh OS-seeded sampler. A process that cannot write the stream (the file, or its
    /// folder, where SQLite keeps the write-ahead log) gets a read-only handle: its reads
    /// write nothing beside the file ([`docs/stream.md`](tpl_core::guide::stream) §5) and its
    /// pushes are refused. Reads need no key; a push reads it.
    ///
    /// # Errors
    /// [`StreamError::Missing`], [`StreamError::Foreign`], [`StreamError::NewerFormat`],
    /// [`StreamError::Corrupt`] (truncated, inconsistent), [`StreamError::NeedsScheme`] or
    /// [`StreamError::NeedsMechanism`] when the stream runs a custom scheme or mechanism these
    /// options do not hold, or SQLite's.
    pub fn open(&self, path: &Path) -> Result<DurableStream> {
        let noise = self.noise.clone().map(|n| Box::new(move || n()) as NoiseMaker);
        DurableStream::open_inner(path, &self.key_path(path), noise, self.plugins.clone())
    }
}
