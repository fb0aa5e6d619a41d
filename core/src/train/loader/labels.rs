//! A loader's labels: how many each sample carries (its label width, the
//! same for every sample of a loader) and the check of a sample's labels
//! against it.
//!
//! The width is fixed before any thread starts (given by
//! [`LoaderConfig::label_width`](super::LoaderConfig::label_width), or the
//! count of the dataset's first sample that reads), so that which sample
//! is refused for another count does not depend on which thread read
//! first, nor on where a resumed stream starts.

use super::super::data::{Dataset, Sample};
use super::{LoadError, LoaderConfig, OnError};

/// The samples [`width`] tries, from index 0, for one that reads (a
/// sample that fails fails again in the stream, naming itself there).
pub(super) const PROBES: usize = 16;

/// The label width a loader of `dataset` runs with: the configured one
/// (or a resumed state's), else the label count of the first of the
/// dataset's first [`PROBES`] samples that reads (a malformed first sample,
/// skipped by [`OnError::Skip`], does not set it). When none of them
/// reads: skipping errors, [`LoadError::LabelWidth`] (a guess would have
/// every sample skipped for its count, silently); failing on errors, 1 (a
/// class index: the epoch ends at its first sample with that sample's own
/// error, or at one of another count, naming it: no batch has a wrong
/// width). 1 for an empty dataset. A stream ([`Dataset::orders_itself`]) is not
/// probed (a read would cost a pass of its own, and standard input has
/// only one): 1 unless configured.
pub(crate) fn width(dataset: &dyn Dataset, config: &LoaderConfig) -> Result<usize, LoadError> {
    if let Some(width) = config.label_width {
        return Ok(width);
    }
    if dataset.orders_itself() {
        return Ok(1);
    }
    let mut sample = Sample::default();
    let tried = dataset.len().min(PROBES);
    let mut first = None;
    for i in 0..tried {
        // A dataset's panic is the stream's to report, with the sample.
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            dataset.read(i, &mut sample)
        }));
        match read {
            Ok(Ok(())) => return Ok(sample.labels.len()),
            Ok(Err(e)) if i == 0 => first = Some(e),
            _ => {}
        }
    }
    if tried == 0 || config.on_error != OnError::Skip {
        return Ok(1);
    }
    Err(LoadError::LabelWidth {
        tried,
        error: first,
    })
}

/// Sample `index`'s labels, checked: `width` of them, each a finite
/// number.
pub(super) fn check(
    dataset: &dyn Dataset,
    index: u64,
    labels: &[f32],
    width: usize,
) -> Result<(), LoadError> {
    if labels.len() != width {
        return Err(LoadError::LabelCount {
            index,
            sample: dataset.describe(index as usize),
            expected: width,
            found: labels.len(),
        });
    }
    if !labels.iter().all(|l| l.is_finite()) {
        return Err(LoadError::Label {
            index,
            sample: dataset.describe(index as usize),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::data::DataError;
    use alloc::string::ToString;

    /// `count(i)` labels for sample `i`; samples `fail` do not read.
    fn dataset(
        len: usize,
        fail: &'static [usize],
        count: fn(usize) -> usize,
    ) -> impl Dataset + use<> {
        (len, move |i: usize, s: &mut Sample| {
            if fail.contains(&i) {
                return Err(DataError::OutOfRange { index: i, len: 0 });
            }
            s.labels.clear();
            s.labels.extend((0..count(i)).map(|k| k as f32));
            Ok(())
        })
    }

    #[test]
    fn the_width_is_the_first_readable_samples_or_the_configured() {
        let config = LoaderConfig {
            on_error: OnError::Skip,
            ..LoaderConfig::default()
        };
        let w = |d: &dyn Dataset, c: &LoaderConfig| width(d, c).unwrap();
        assert_eq!(w(&dataset(5, &[], |i| i + 3), &config), 3);
        assert_eq!(w(&dataset(5, &[0, 1], |i| i + 3), &config), 5);
        assert_eq!(w(&dataset(5, &[], |_| 0), &config), 0);
        // None to read: a class index.
        assert_eq!(w(&dataset(0, &[], |_| 7), &config), 1);
        // The last probe reads; none of the probes reads: an error, with
        // the first's cause.
        let late: &[usize] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14];
        assert_eq!(w(&dataset(20, late, |_| 4), &config), 4);
        let e = width(&dataset(5, &[0, 1, 2, 3, 4], |_| 7), &config).unwrap_err();
        assert!(
            matches!(
                e,
                LoadError::LabelWidth {
                    tried: 5,
                    error: Some(DataError::OutOfRange { index: 0, .. })
                }
            ),
            "{e}"
        );
        let all: &[usize] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
        let e = width(&dataset(20, all, |_| 4), &config).unwrap_err();
        assert!(matches!(e, LoadError::LabelWidth { tried: 16, .. }), "{e}");
        assert!(e.to_string().contains("label_width"), "{e}");
        // Failing on errors, the stream names the sample that does not
        // read: no error here.
        let failing = LoaderConfig::default();
        assert_eq!(failing.on_error, OnError::Fail);
        assert_eq!(w(&dataset(20, all, |_| 4), &failing), 1);
        let config = LoaderConfig {
            label_width: Some(2),
            ..config
        };
        assert_eq!(w(&dataset(5, &[], |_| 7), &config), 2);
    }

    #[test]
    fn a_sample_with_another_count_or_a_non_finite_label_is_refused() {
        let d = dataset(5, &[], |_| 2);
        assert!(check(&d, 3, &[1.0, 2.0], 2).is_ok());
        assert!(check(&d, 3, &[], 0).is_ok());
        let e = check(&d, 3, &[1.0, 2.0, 3.0], 2).unwrap_err();
        assert!(
            matches!(
                e,
                LoadError::LabelCount {
                    index: 3,
                    expected: 2,
                    found: 3,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("sample 3"), "{e}");
        let e = check(&d, 4, &[1.0, f32::NAN], 2).unwrap_err();
        assert!(matches!(e, LoadError::Label { index: 4, .. }), "{e}");
    }
}
