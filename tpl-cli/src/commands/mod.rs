//! One module per subcommand: each parses nothing itself (clap did), reads its files through
//! the shared parsers, calls the libraries and returns a [`crate::render::Report`].

pub mod allocate;
pub mod compare;
pub mod completions;
pub mod demo;
pub mod estimate;
pub mod leakage;
pub mod loss;
pub mod man;
pub mod postprocess;
pub mod release;
pub mod simulate;
pub mod stream;
pub mod supremum;
