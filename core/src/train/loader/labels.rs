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
use super::{LoadError, LoaderConfig};

/// The samples [`width`] tries, from index 0, for one that reads (a
/// sample that fails fails again in the stream, naming itself there).
pub(super) const PROBES: usize = 16;

/// The label width a loader of `dataset` runs with: the configured one,
/// else the label count of the first of the dataset's first [`PROBES`]
/// samples that reads; 1 (a class index) when none of them reads (or the
/// dataset is empty). A stream ([`Dataset::orders_itself`]) is not probed
/// (a read would cost a pass of its own, and standard input has only
/// one): 1 unless configured.
pub(crate) fn width(dataset: &dyn Dataset, config: &LoaderConfig) -> usize {
    if let Some(width) = config.label_width {
        return width;
    }
    if dataset.orders_itself() {
        return 1;
    }
    let mut sample = Sample::default();
    (0..dataset.len().min(PROBES))
        .find_map(|i| {
            // A dataset's panic is the stream's to report, with the sample.
            let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                dataset.read(i, &mut sample)
            }));
            matches!(read, Ok(Ok(()))).then_some(sample.labels.len())
        })
        .unwrap_or(1)
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
        let config = LoaderConfig::default();
        assert_eq!(width(&dataset(5, &[], |i| i + 3), &config), 3);
        assert_eq!(width(&dataset(5, &[0, 1], |i| i + 3), &config), 5);
        assert_eq!(width(&dataset(5, &[], |_| 0), &config), 0);
        // None reads, or none to read: a class index.
        assert_eq!(width(&dataset(5, &[0, 1, 2, 3, 4], |_| 7), &config), 1);
        assert_eq!(width(&dataset(0, &[], |_| 7), &config), 1);
        let config = LoaderConfig {
            label_width: Some(2),
            ..config
        };
        assert_eq!(width(&dataset(5, &[], |_| 7), &config), 2);
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
