//! Where the correlation matrices of a comparison came from, and which steps it scored —
//! what `tpl compare` and `tpl demo` say about it in every format
//! ([`docs/cli.md`](tpl_core::guide::cli) §2.9): the `matrices` object of the JSON, a `#` line of
//! the CSV and a sentence of the table.

use serde::ser::{Serialize, SerializeStruct, Serializer};
use tpl_compare::Holdout;
use tpl_core::Steps;

/// Where the correlation matrices of a comparison came from and which steps it scored:
/// whether the matrices were estimated from the scored data ([`docs/cli.md`](tpl_core::guide::cli),
/// `tpl compare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatrixSource {
    /// How the matrices were obtained.
    pub origin: MatrixOrigin,
    /// The steps scored (from 1, of the counts or stream given).
    pub score: Steps,
}

/// How the matrices of a comparison were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatrixOrigin {
    /// Estimated from these steps of the user stream whose other steps are scored.
    Estimated(Holdout),
    /// Read from files: whether they were estimated from the scored data is not known.
    Files,
    /// Given by a library's caller (arrays or files, e.g. Python's `compare`): whether they
    /// were estimated from the scored data is not known.
    Given,
    /// No matrix was given.
    None,
}

impl MatrixSource {
    /// Matrices estimated from the training steps of `holdout`, scoring its scored steps.
    pub fn estimated(holdout: Holdout) -> Self {
        Self { origin: MatrixOrigin::Estimated(holdout), score: holdout.score() }
    }

    /// Matrix files (`files`: at least one given) or none, scoring `score`.
    pub fn given(files: bool, score: Steps) -> Self {
        Self { origin: if files { MatrixOrigin::Files } else { MatrixOrigin::None }, score }
    }

    /// Matrices a library's caller gave (`given`: at least one) or none, scoring `score`.
    pub fn from_caller(given: bool, score: Steps) -> Self {
        Self { origin: if given { MatrixOrigin::Given } else { MatrixOrigin::None }, score }
    }

    /// Whether the matrices came from the scored data: `Some(true)` when the training steps
    /// share a scored step, `None` when it is not known (matrix files).
    pub fn in_sample(&self) -> Option<bool> {
        match self.origin {
            MatrixOrigin::Estimated(h) => Some(h.in_sample()),
            MatrixOrigin::Files | MatrixOrigin::Given => None,
            MatrixOrigin::None => Some(false),
        }
    }

    /// The `#` line of the CSV output.
    pub fn csv_line(&self) -> String {
        let in_sample = self.in_sample().map_or("unknown".to_string(), |b| b.to_string());
        match self.origin {
            MatrixOrigin::Estimated(h) => format!(
                "# matrices=estimated train_steps={} score_steps={} in_sample={in_sample}\n",
                h.train(),
                self.score
            ),
            MatrixOrigin::Files => {
                format!("# matrices=files score_steps={} in_sample={in_sample}\n", self.score)
            }
            MatrixOrigin::Given => {
                format!("# matrices=given score_steps={} in_sample={in_sample}\n", self.score)
            }
            MatrixOrigin::None => {
                format!("# matrices=none score_steps={} in_sample={in_sample}\n", self.score)
            }
        }
    }

    /// The sentence of the table output.
    pub fn sentence(&self) -> String {
        match self.origin {
            MatrixOrigin::Estimated(h) => match h.train().overlap(&h.score()) {
                None => format!(
                    "Matrices estimated from steps {} of the stream, strategies scored on steps {}: out of sample \
                     (the matrices never saw the scored data).",
                    h.train(),
                    self.score
                ),
                Some(shared) => format!(
                    "Matrices estimated from steps {} of the stream, strategies scored on steps {}: IN SAMPLE — the \
                     matrices saw {} of the {} scored steps, which flatters every estimator that uses them.",
                    h.train(),
                    self.score,
                    shared.len(),
                    self.score.len()
                ),
            },
            MatrixOrigin::Files => format!(
                "Matrices read from files, strategies scored on steps {}: whether the matrices were estimated from \
                 the scored data is not known (--stream S --train-steps A..B estimates them from other steps).",
                self.score
            ),
            MatrixOrigin::Given => format!(
                "Matrices given, strategies scored on steps {}: whether the matrices were estimated from the \
                 scored data is not known (estimate them from another period than the one scored).",
                self.score
            ),
            MatrixOrigin::None => {
                format!("No correlation matrices; strategies scored on steps {}.", self.score)
            }
        }
    }
}

/// The `matrices` object of the JSON output: `source` (`estimated`, `files`, `given` or
/// `none`),
/// `train_steps` and `score_steps` (`[first, last]`, from 1; `train_steps` null unless
/// estimated) and `in_sample` (null when not known).
impl Serialize for MatrixSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let pair = |s: Steps| [s.first(), s.last()];
        let (source, train) = match self.origin {
            MatrixOrigin::Estimated(h) => ("estimated", Some(pair(h.train()))),
            MatrixOrigin::Files => ("files", None),
            MatrixOrigin::Given => ("given", None),
            MatrixOrigin::None => ("none", None),
        };
        let mut out = serializer.serialize_struct("MatrixSource", 4)?;
        out.serialize_field("source", source)?;
        out.serialize_field("train_steps", &train)?;
        out.serialize_field("score_steps", &pair(self.score))?;
        out.serialize_field("in_sample", &self.in_sample())?;
        out.end()
    }
}
