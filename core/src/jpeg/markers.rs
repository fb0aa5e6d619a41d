//! Walking a JPEG's marker segments up to the first scan, with bounds checks:
//! the frame header (coding process, precision, size) and the APPn payloads.

/// The marker segments before the first scan: `(marker, payload)`.
pub(crate) struct Segments<'a> {
    jpeg: &'a [u8],
    at: usize,
}

/// The segments of `jpeg` before its first scan (nothing if it is no JPEG).
pub(crate) fn segments(jpeg: &[u8]) -> Segments<'_> {
    let at = if jpeg.starts_with(&[0xFF, 0xD8]) {
        2
    } else {
        usize::MAX
    };
    Segments { jpeg, at }
}

impl<'a> Iterator for Segments<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        loop {
            let at = self.at;
            let [ff, marker] = *self.jpeg.get(at..at.checked_add(2)?)? else {
                return None;
            };
            if ff != 0xFF {
                return None;
            }
            if marker == 0xFF {
                self.at += 1; // a fill byte
                continue;
            }
            // Start of scan or end of image: the headers are over.
            if marker == 0xDA || marker == 0xD9 {
                return None;
            }
            let len = self.jpeg.get(at + 2..at + 4)?;
            let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
            let payload = self.jpeg.get(at + 4..(at + 2).checked_add(len)?)?;
            self.at = at.checked_add(2 + len)?;
            return Some((marker, payload));
        }
    }
}

/// What a JPEG's frame header (SOFn) says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The SOF marker: 0xC0-0xC3, 0xC5-0xC7, 0xC9-0xCB, 0xCD-0xCF.
    pub(crate) marker: u8,
    /// Bits per sample.
    pub(crate) precision: u8,
    pub(crate) width: u16,
    pub(crate) height: u16,
    /// Colour components.
    pub(crate) components: u8,
}

/// The colour transform of an Adobe APP14 segment (0: none, the samples are
/// RGB or CMYK; 1: YCbCr; 2: YCCK), if the file has one before its first scan.
pub(crate) fn adobe_transform(jpeg: &[u8]) -> Option<u8> {
    segments(jpeg).find_map(|(marker, p)| {
        (marker == 0xEE && p.len() >= 12 && p.starts_with(b"Adobe")).then(|| p[11])
    })
}

/// The frame header of `jpeg`, if it can be found before the first scan.
pub(crate) fn frame(jpeg: &[u8]) -> Option<Frame> {
    segments(jpeg).find_map(|(marker, p)| {
        let sof = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        (sof && p.len() >= 6).then(|| Frame {
            marker,
            precision: p[0],
            height: u16::from_be_bytes([p[1], p[2]]),
            width: u16::from_be_bytes([p[3], p[4]]),
            components: p[5],
        })
    })
}
