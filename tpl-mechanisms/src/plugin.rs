//! The plugin point ([`docs/plugins.md`](tpl_core::guide::plugins)): one trait for a scheme
//! and one for a mechanism, taken by everything that runs schemes — `tpl_compare::compare`, a
//! durable stream of `tpl-stream`, the `tpl` binary and the Python package. The built-in
//! schemes come through the same door: [`SchemeKind`] is a [`SchemeBuilder`], and the binary
//! looks every scheme up in a [`SchemeRegistry`] filled with them.

use std::fmt;
use std::sync::Arc;

use crate::error::{MechError, Result};
use crate::mechanism::{LaplaceMechanism, Mechanism};
use crate::noise::NoiseSource;
use crate::params::WEventParams;
use crate::scheme::StreamScheme;
use crate::schemes::{SchemeInputs, SchemeKind};

/// The type of a scheme's builder as a closure ([`scheme_builder`]).
pub type BuildScheme = dyn Fn(WEventParams, &SchemeInputs, Box<dyn Mechanism + Send>) -> Result<Box<dyn StreamScheme + Send>>
    + Send
    + Sync;

/// Builds a w-event stream scheme over a mechanism it is handed — the scheme of a
/// comparison's run, of a durable stream at every open, of `tpl release`. The name is the
/// scheme's identity: the row label of a comparison, the name a stream file stores (and
/// finds the builder by when it is opened again), the name on the command line.
///
/// A scheme must release through the mechanism it is built with: that is the mechanism a
/// durable stream guards and records, so a scheme that draws elsewhere is refused at its
/// first step (the spend it reports is not what its draws spent).
///
/// ```
/// use tpl_mechanisms::{DiscreteLaplace, LaplaceMechanism, SchemeBuilder, SchemeKind, WEventParams, scheme_builder};
/// let mine = scheme_builder("my-uniform", |params, _, mechanism| {
///     Ok(Box::new(tpl_mechanisms::Uniform::new(params, mechanism)))
/// });
/// let params = WEventParams::new(1.0, 10, 2.0)?;
/// let mechanism = Box::new(LaplaceMechanism::new(DiscreteLaplace::seeded(1)));
/// let inputs = tpl_mechanisms::SchemeInputs::from(tpl_mechanisms::PbaPool::Never);
/// let mut scheme = mine.build(params, &inputs, mechanism)?;
/// assert!(scheme.step(&[10.0, 20.0])?.published);
/// assert_eq!((mine.name(), SchemeKind::Uniform.name()), ("my-uniform", "uniform"));
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
pub trait SchemeBuilder: Send + Sync {
    /// The scheme's name.
    fn name(&self) -> &str;

    /// The scheme with parameters (ε, w, Δ), inputs (PBA's correlation, a plan), releasing
    /// through `mechanism`.
    ///
    /// # Errors
    /// Parameters or inputs the scheme refuses.
    fn build(
        &self,
        params: WEventParams,
        inputs: &SchemeInputs,
        mechanism: Box<dyn Mechanism + Send>,
    ) -> Result<Box<dyn StreamScheme + Send>>;
}

/// A shared builder builds as the one it shares.
impl<B: SchemeBuilder + ?Sized> SchemeBuilder for Arc<B> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn build(
        &self,
        params: WEventParams,
        inputs: &SchemeInputs,
        mechanism: Box<dyn Mechanism + Send>,
    ) -> Result<Box<dyn StreamScheme + Send>> {
        (**self).build(params, inputs, mechanism)
    }
}

/// The built-in schemes build as a user's does.
impl SchemeBuilder for SchemeKind {
    fn name(&self) -> &str {
        SchemeKind::name(*self)
    }

    fn build(
        &self,
        params: WEventParams,
        inputs: &SchemeInputs,
        mechanism: Box<dyn Mechanism + Send>,
    ) -> Result<Box<dyn StreamScheme + Send>> {
        self.build_send(params, mechanism, inputs.clone())
    }
}

/// A builder made of a name and a closure of type `F` ([`scheme_builder`],
/// [`mechanism_builder`]).
pub struct Named<F: ?Sized> {
    name: String,
    build: Box<F>,
}

impl<F: ?Sized> fmt::Debug for Named<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Named").field("name", &self.name).finish_non_exhaustive()
    }
}

/// A [`SchemeBuilder`] made of a name and a closure ([`scheme_builder`]).
pub type NamedScheme = Named<BuildScheme>;

/// The [`SchemeBuilder`] called `name` that builds with `build`.
pub fn scheme_builder(
    name: impl Into<String>,
    build: impl Fn(WEventParams, &SchemeInputs, Box<dyn Mechanism + Send>) -> Result<Box<dyn StreamScheme + Send>>
    + Send
    + Sync
    + 'static,
) -> NamedScheme {
    Named { name: name.into(), build: Box::new(build) }
}

impl SchemeBuilder for NamedScheme {
    fn name(&self) -> &str {
        &self.name
    }

    fn build(
        &self,
        params: WEventParams,
        inputs: &SchemeInputs,
        mechanism: Box<dyn Mechanism + Send>,
    ) -> Result<Box<dyn StreamScheme + Send>> {
        (self.build)(params, inputs, mechanism)
    }
}

/// The type of a mechanism's builder as a closure ([`mechanism_builder`]).
pub type BuildMechanism = dyn Fn(Box<dyn NoiseSource + Send>) -> Box<dyn Mechanism + Send> + Send + Sync;

/// Builds the mechanism a scheme releases through, over the noise source the caller hands
/// it: the operating system's (a durable stream, a release) or a seeded one (a comparison's
/// run, `--seed`). The caller decides where randomness comes from; the mechanism decides what
/// to do with it. A durable stream stores the name and wraps the mechanism in its guard, so
/// that its ledger records what the mechanism draws.
///
/// ```
/// use tpl_mechanisms::{DiscreteLaplace, LaplaceMechanism, Mechanism, MechanismBuilder, mechanism_builder};
/// let laplace = mechanism_builder("my-laplace", |noise| Box::new(LaplaceMechanism::new(noise)));
/// let mut m = laplace.build(Box::new(DiscreteLaplace::seeded(7)));
/// assert_eq!(m.release(&[3.0], 2.0, 1.0)?.len(), 1);
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
pub trait MechanismBuilder: Send + Sync {
    /// The mechanism's name (stored by a durable stream; not `laplace`, the built-in's).
    fn name(&self) -> &str;

    /// The mechanism, drawing from `noise`.
    fn build(&self, noise: Box<dyn NoiseSource + Send>) -> Box<dyn Mechanism + Send>;
}

/// A shared builder builds as the one it shares.
impl<B: MechanismBuilder + ?Sized> MechanismBuilder for Arc<B> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn build(&self, noise: Box<dyn NoiseSource + Send>) -> Box<dyn Mechanism + Send> {
        (**self).build(noise)
    }
}

/// The built-in mechanism's builder: [`LaplaceMechanism`] over the noise handed in.
#[derive(Debug, Clone, Copy, Default)]
pub struct Laplace;

impl MechanismBuilder for Laplace {
    fn name(&self) -> &str {
        "laplace"
    }

    fn build(&self, noise: Box<dyn NoiseSource + Send>) -> Box<dyn Mechanism + Send> {
        Box::new(LaplaceMechanism::new(noise))
    }
}

/// A [`MechanismBuilder`] made of a name and a closure ([`mechanism_builder`]).
pub type NamedMechanism = Named<BuildMechanism>;

/// The [`MechanismBuilder`] called `name` that builds with `build`.
pub fn mechanism_builder(
    name: impl Into<String>,
    build: impl Fn(Box<dyn NoiseSource + Send>) -> Box<dyn Mechanism + Send> + Send + Sync + 'static,
) -> NamedMechanism {
    Named { name: name.into(), build: Box::new(build) }
}

impl MechanismBuilder for NamedMechanism {
    fn name(&self) -> &str {
        &self.name
    }

    fn build(&self, noise: Box<dyn NoiseSource + Send>) -> Box<dyn Mechanism + Send> {
        (self.build)(noise)
    }
}

/// The schemes a program can run, by name: the built-in ones ([`SchemeRegistry::built_in`])
/// and those registered beside them. The `tpl` binary resolves every `--scheme` here.
///
/// ```
/// use tpl_mechanisms::{SchemeRegistry, scheme_builder};
/// let mut schemes = SchemeRegistry::built_in();
/// assert!(schemes.get("bd").is_some());
/// schemes.register(scheme_builder("mine", |p, _, m| Ok(Box::new(tpl_mechanisms::Bd::new(p, m)))))?;
/// assert!(schemes.register(scheme_builder("bd", |p, _, m| Ok(Box::new(tpl_mechanisms::Bd::new(p, m))))).is_err());
/// assert_eq!(schemes.names().last(), Some(&"mine"));
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
#[derive(Clone)]
pub struct SchemeRegistry {
    schemes: Vec<Arc<dyn SchemeBuilder>>,
}

impl fmt::Debug for SchemeRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl SchemeRegistry {
    /// The built-in schemes, [`SchemeKind::BUILT_IN`].
    pub fn built_in() -> Self {
        let kinds = SchemeKind::BUILT_IN.into_iter();
        Self { schemes: kinds.map(|k| Arc::new(k) as Arc<dyn SchemeBuilder>).collect() }
    }

    /// Adds `scheme` (an `Arc` of one too) under its name.
    ///
    /// # Errors
    /// [`MechError::Custom`] when a scheme of that name is already registered (built-in names
    /// included), or the name is empty.
    pub fn register(&mut self, scheme: impl SchemeBuilder + 'static) -> Result<()> {
        let name = scheme.name();
        if name.is_empty() {
            return Err(MechError::custom("a scheme needs a name"));
        }
        if self.get(name).is_some() {
            return Err(MechError::custom(format!("a scheme called {name:?} is already registered")));
        }
        self.schemes.push(Arc::new(scheme));
        Ok(())
    }

    /// The scheme called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn SchemeBuilder>> {
        self.schemes.iter().find(|s| s.name() == name)
    }

    /// Every registered name, built-in first.
    pub fn names(&self) -> Vec<&str> {
        self.schemes.iter().map(|s| s.name()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DiscreteLaplace, run};

    #[test]
    fn a_built_in_scheme_through_the_door_runs_as_when_built_directly() {
        let params = WEventParams::new(1.0, 5, 2.0).unwrap();
        let stream: Vec<Vec<f64>> = (0..40).map(|t| vec![(t % 7 * 10) as f64, 4.0]).collect();
        for kind in SchemeKind::BUILT_IN {
            let mechanism = Laplace.build(Box::new(DiscreteLaplace::seeded(3)));
            let inputs = SchemeInputs { pba_pool: crate::PbaPool::Always, plan: vec![0.1; 40] };
            let mut door = SchemeBuilder::build(&kind, params, &inputs, mechanism).unwrap();
            let mut direct =
                kind.build(params, LaplaceMechanism::new(DiscreteLaplace::seeded(3)), inputs).unwrap();
            let (a, b) = (run(door.as_mut(), &stream).unwrap(), run(direct.as_mut(), &stream).unwrap());
            assert_eq!(a.releases, b.releases, "{}", kind.name());
            assert_eq!(a.budgets(), b.budgets(), "{}", kind.name());
        }
    }

    #[test]
    fn the_registry_refuses_a_second_scheme_of_a_name_and_an_empty_name() {
        let mut r = SchemeRegistry::built_in();
        let n = r.names().len();
        let uniform = |name: &str| scheme_builder(name, |p, _, m| Ok(Box::new(crate::Uniform::new(p, m))));
        assert!(r.register(uniform("planned")).unwrap_err().to_string().contains("\"planned\""));
        assert!(r.register(uniform("")).is_err());
        r.register(uniform("u2")).unwrap();
        assert!(r.register(uniform("u2")).is_err());
        assert_eq!(r.names().len(), n + 1);
        assert_eq!(r.get("u2").map(|s| s.name()), Some("u2"));
        assert!(r.get("nope").is_none());
    }
}
