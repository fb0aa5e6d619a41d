//! Colour conversion as libjpeg-turbo's `jdcolor.c` does it: YCbCr to RGB
//! through its 16-bit fixed-point tables, YCCK to CMYK through the same,
//! RGB and CMYK copied (docs/design/jpeg-exactness.md, §5).

/// `FIX(x)` with 16 fraction bits.
const fn fix(x: f64) -> i32 {
    (x * 65536.0 + 0.5) as i32
}

/// The tables of `build_ycc_rgb_table`, indexed by the sample.
struct Tables {
    cr_r: [i32; 256],
    cb_b: [i32; 256],
    cr_g: [i32; 256],
    cb_g: [i32; 256],
}

const TABLES: Tables = {
    let mut t = Tables {
        cr_r: [0; 256],
        cb_b: [0; 256],
        cr_g: [0; 256],
        cb_g: [0; 256],
    };
    let mut i = 0;
    while i < 256 {
        let x = i as i32 - 128;
        t.cr_r[i] = (fix(1.40200) * x + (1 << 15)) >> 16;
        t.cb_b[i] = (fix(1.77200) * x + (1 << 15)) >> 16;
        t.cr_g[i] = -fix(0.71414) * x;
        t.cb_g[i] = -fix(0.34414) * x + (1 << 15);
        i += 1;
    }
    t
};

#[inline(always)]
fn clamp(x: i32) -> u8 {
    x.clamp(0, 255) as u8
}

/// One pixel's RGB from its Y, Cb and Cr.
#[inline(always)]
pub(super) fn ycc_to_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    let (y, cb, cr) = (i32::from(y), usize::from(cb), usize::from(cr));
    [
        clamp(y + TABLES.cr_r[cr]),
        clamp(y + ((TABLES.cb_g[cb] + TABLES.cr_g[cr]) >> 16)),
        clamp(y + TABLES.cb_b[cb]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_libjpeg_turbos() {
        // FIX(1.40200) = 91881, FIX(1.77200) = 116130, FIX(0.71414) = 46802,
        // FIX(0.34414) = 22554 (jdcolor.c's constants).
        assert_eq!(
            [fix(1.402), fix(1.772), fix(0.71414), fix(0.34414)],
            [91881, 116130, 46802, 22554]
        );
        assert_eq!(ycc_to_rgb(128, 128, 128), [128, 128, 128]);
        assert_eq!(ycc_to_rgb(255, 128, 255), [255, 164, 255]);
        assert_eq!(ycc_to_rgb(0, 255, 0), [0, 48, 225]);
    }
}
