//! The project's documents, shipped with the crate so that every crate's API docs can cite
//! them wherever they are read (docs.rs included). Each module below is one page of the
//! repository's `docs/` folder, word for word; the rustdoc comments of every `tpl-*` crate
//! link to these modules when they say "`docs/<page>.md` §n".
//!
//! Links between pages are written for the repository (`map.md`, `cli.md`): read there, they
//! lead to the sibling page; here, use the list below.

#[doc = include_str!("../guide/model.md")]
pub mod model {}

#[doc = include_str!("../guide/map.md")]
pub mod map {}

#[doc = include_str!("../guide/w-event.md")]
pub mod w_event {}

#[doc = include_str!("../guide/stream.md")]
pub mod stream {}

#[doc = include_str!("../guide/formats.md")]
pub mod formats {}

#[doc = include_str!("../guide/intervals.md")]
pub mod intervals {}

#[doc = include_str!("../guide/plugins.md")]
pub mod plugins {}

#[doc = include_str!("../guide/cli.md")]
pub mod cli {}
