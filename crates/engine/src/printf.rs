//! The `PRINTF` environment call: C `printf` formatting of a format string and a `va_list`
//! read from the DPU's memory (RV32 ILP32 layout: 4-byte slots, 8-byte arguments in 8-byte
//! aligned pairs, `float` promoted to `double`).
//!
//! Supported: flags `-+ #0`, width and precision (also `*`), lengths `hh h l ll z t j`,
//! conversions `d i u x X o c s p f F e E g G %` (and `n`, whose pointer is consumed and
//! ignored). An unknown conversion is copied to the output as written, consuming nothing.

use crate::map::{MRAM_BASE, WRAM_SIZE};
use crate::Fault;

const WS: usize = WRAM_SIZE as usize;
/// Widths and precisions are clamped to this (a DPU program cannot make the host allocate
/// gigabytes with `%999999999d`).
const MAX_FIELD: usize = 4096;
/// Most bytes of printf output one launch may produce (the real runtime stores raw
/// arguments, the host formats them; this only stops a hostile program from making the
/// host format gigabytes).
pub(crate) const LOG_LIMIT: usize = 64 << 20;

struct Mem<'a> {
    wram: &'a [u8; WS],
    mram: &'a [u8],
}

impl Mem<'_> {
    fn byte(&self, addr: u32) -> Result<u8, Fault> {
        if (addr as usize) < WS {
            return Ok(self.wram[addr as usize]);
        }
        let off = addr.wrapping_sub(MRAM_BASE) as usize;
        if addr >= MRAM_BASE && off < self.mram.len() {
            return Ok(self.mram[off]);
        }
        Err(Fault::WramOutOfRange { addr, size: 1 })
    }

    fn word(&self, addr: u32) -> Result<u32, Fault> {
        let mut b = [0u8; 4];
        for (i, x) in b.iter_mut().enumerate() {
            *x = self.byte(addr.wrapping_add(i as u32))?;
        }
        Ok(u32::from_le_bytes(b))
    }
}

/// The `va_list` cursor.
struct Args<'a> {
    mem: &'a Mem<'a>,
    ap: u32,
}

impl Args<'_> {
    fn next32(&mut self) -> Result<u32, Fault> {
        let v = self.mem.word(self.ap)?;
        self.ap = self.ap.wrapping_add(4);
        Ok(v)
    }

    fn next64(&mut self) -> Result<u64, Fault> {
        self.ap = self.ap.wrapping_add(7) & !7;
        let lo = self.next32()?;
        let hi = self.next32()?;
        Ok(u64::from(lo) | (u64::from(hi) << 32))
    }
}

#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    prec: Option<usize>,
}

/// What one `printf` call takes in the DPU's printf buffer, as the UPMEM runtime encodes it
/// (the host formats the text only when it reads the log): a format section (each run of
/// literal characters becomes `%s`, each conversion `%` and its letters but `L` and `z`, then
/// a NUL) and an argument section (4 bytes per argument, 8 with an `l` length or for a
/// floating-point one, 1 for `%c`, a string's bytes and its NUL for `%s`, each run of literal
/// characters and its NUL), written through an 8-byte cache: the call takes the next multiple
/// of 8 above its bytes (its last, partial or empty, cache line is padded and written).
#[derive(Default)]
struct Encoding {
    format: u64,
    args: u64,
    /// A run of literal characters is under way (in the format section: its `%s` is written;
    /// in the argument section: its NUL is owed).
    literal: bool,
}

impl Encoding {
    fn literal(&mut self) {
        if !self.literal {
            self.format += 2;
            self.literal = true;
        }
        self.args += 1;
    }

    fn conversion(&mut self, spec_letters: u64, arg_bytes: u64) {
        self.format += 1 + spec_letters;
        self.args += arg_bytes + u64::from(self.literal);
        self.literal = false;
    }

    fn buffer_bytes(&self) -> u64 {
        let n = self.format + 1 + self.args + u64::from(self.literal);
        (n / 8 + 1) * 8
    }
}

/// Formats one `printf` call into `out`. Returns the bytes the call takes in the DPU's
/// printf buffer (`Encoding`).
pub(crate) fn format(
    wram: &[u8; WS],
    mram: &[u8],
    fmt: u32,
    va: u32,
    out: &mut Vec<u8>,
) -> Result<u64, Fault> {
    let mem = Mem { wram, mram };
    let mut args = Args { mem: &mem, ap: va };
    let mut p = fmt;
    let log_start = out.len();
    let mut encoded = Encoding::default();
    let next = |p: &mut u32| -> Result<u8, Fault> {
        let c = mem.byte(*p)?;
        *p = p.wrapping_add(1);
        Ok(c)
    };
    loop {
        if out.len() > LOG_LIMIT {
            out.truncate(log_start);
            return Err(Fault::PrintfOutputTooLarge {
                limit: LOG_LIMIT as u64,
            });
        }
        let c = next(&mut p)?;
        if c == 0 {
            break;
        }
        if c != b'%' {
            out.push(c);
            encoded.literal();
            continue;
        }
        let spec_start = p.wrapping_sub(1);
        let mut s = Spec::default();
        let mut c = next(&mut p)?;
        loop {
            match c {
                b'-' => s.left = true,
                b'+' => s.plus = true,
                b' ' => s.space = true,
                b'#' => s.alt = true,
                b'0' => s.zero = true,
                _ => break,
            }
            c = next(&mut p)?;
        }
        if c == b'*' {
            let w = args.next32()? as i32;
            if w < 0 {
                s.left = true;
            }
            s.width = (w.unsigned_abs() as usize).min(MAX_FIELD);
            c = next(&mut p)?;
        } else {
            while c.is_ascii_digit() {
                s.width = (s.width * 10 + usize::from(c - b'0')).min(MAX_FIELD);
                c = next(&mut p)?;
            }
        }
        if c == b'.' {
            c = next(&mut p)?;
            if c == b'*' {
                let v = args.next32()? as i32;
                s.prec = if v < 0 {
                    None
                } else {
                    Some((v as usize).min(MAX_FIELD))
                };
                c = next(&mut p)?;
            } else {
                let mut v = 0usize;
                while c.is_ascii_digit() {
                    v = (v * 10 + usize::from(c - b'0')).min(MAX_FIELD);
                    c = next(&mut p)?;
                }
                s.prec = Some(v);
            }
        }
        // Length: bits of the integer argument.
        let mut bits = 32u32;
        let mut int_bits = 32u32;
        let (mut long, mut unwritten) = (false, 0u64);
        match c {
            b'h' => {
                c = next(&mut p)?;
                int_bits = 16;
                if c == b'h' {
                    c = next(&mut p)?;
                    int_bits = 8;
                }
            }
            b'l' => {
                long = true;
                c = next(&mut p)?;
                if c == b'l' {
                    c = next(&mut p)?;
                    bits = 64;
                    int_bits = 64;
                }
            }
            b'j' => {
                c = next(&mut p)?;
                bits = 64;
                int_bits = 64;
            }
            b'z' | b't' => {
                unwritten = u64::from(c == b'z');
                c = next(&mut p)?;
            }
            _ => {}
        }
        // (The runtime keeps the letters up to the conversion, less `z`; `%%` is a literal.)
        let letters = u64::from(p.wrapping_sub(spec_start) - 1) - unwritten;
        let word = if long || bits == 64 { 8 } else { 4 };
        match c {
            b'%' => encoded.literal(),
            b'c' => encoded.conversion(letters, 1),
            b's' => {}
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' => encoded.conversion(letters, 8),
            _ => encoded.conversion(letters, word),
        }
        let fetch = |args: &mut Args<'_>| -> Result<u64, Fault> {
            if bits == 64 {
                args.next64()
            } else {
                args.next32().map(u64::from)
            }
        };
        match c {
            b'd' | b'i' => {
                let raw = fetch(&mut args)?;
                let v: i64 = match int_bits {
                    8 => i64::from(raw as u8 as i8),
                    16 => i64::from(raw as u16 as i16),
                    32 => i64::from(raw as u32 as i32),
                    _ => raw as i64,
                };
                let sign = if v < 0 {
                    "-"
                } else if s.plus {
                    "+"
                } else if s.space {
                    " "
                } else {
                    ""
                };
                let digits = int_digits(v.unsigned_abs(), 10, false, s.prec);
                pad(out, &s, sign, &digits, s.prec.is_none());
            }
            b'u' | b'x' | b'X' | b'o' => {
                let raw = fetch(&mut args)?;
                let v = match int_bits {
                    8 => raw & 0xff,
                    16 => raw & 0xffff,
                    32 => raw & 0xffff_ffff,
                    _ => raw,
                };
                let (base, upper) = match c {
                    b'u' => (10, false),
                    b'x' => (16, false),
                    b'X' => (16, true),
                    _ => (8, false),
                };
                let mut digits = int_digits(v, base, upper, s.prec);
                let mut prefix = "";
                if s.alt {
                    if c == b'o' && !digits.starts_with('0') {
                        digits.insert(0, '0');
                    } else if v != 0 && c == b'x' {
                        prefix = "0x";
                    } else if v != 0 && c == b'X' {
                        prefix = "0X";
                    }
                }
                pad(out, &s, prefix, &digits, s.prec.is_none());
            }
            b'p' => {
                let v = args.next32()?;
                let digits = int_digits(u64::from(v), 16, false, s.prec);
                pad(out, &s, "0x", &digits, s.prec.is_none());
            }
            b'c' => {
                let v = args.next32()? as u8;
                pad_bytes(out, &s, &[v]);
            }
            b's' => {
                let addr = args.next32()?;
                let mut bytes = Vec::new();
                if addr == 0 {
                    bytes.extend_from_slice(b"(null)");
                    if let Some(pr) = s.prec {
                        bytes.truncate(pr);
                    }
                } else {
                    let max = s.prec.unwrap_or(usize::MAX);
                    let mut a = addr;
                    while bytes.len() < max {
                        let b = mem.byte(a)?;
                        if b == 0 {
                            break;
                        }
                        bytes.push(b);
                        a = a.wrapping_add(1);
                    }
                }
                pad_bytes(out, &s, &bytes);
                encoded.conversion(letters, bytes.len() as u64 + 1);
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' => {
                let v = f64::from_bits(args.next64()?);
                let (sign, body, finite) = float_body(v, c, &s);
                pad(out, &s, sign, &body, finite);
            }
            b'%' => out.push(b'%'),
            b'n' => {
                args.next32()?;
            }
            _ => {
                // Unknown conversion: copy the specification as written.
                let mut a = spec_start;
                while a != p {
                    out.push(mem.byte(a)?);
                    a = a.wrapping_add(1);
                }
                if c == 0 {
                    out.pop();
                    break;
                }
            }
        }
    }
    Ok(encoded.buffer_bytes())
}

/// Digits of `v` in `base`, zero-extended to `prec` digits (C rules: precision 0 and value 0
/// give no digits).
fn int_digits(v: u64, base: u64, upper: bool, prec: Option<usize>) -> String {
    let mut s = match (base, upper) {
        (16, false) => format!("{v:x}"),
        (16, true) => format!("{v:X}"),
        (8, _) => format!("{v:o}"),
        _ => format!("{v}"),
    };
    match prec {
        Some(0) if v == 0 => s.clear(),
        Some(p) if p > s.len() => s.insert_str(0, &"0".repeat(p - s.len())),
        _ => {}
    }
    s
}

/// Writes `prefix` + `body` padded to the width: spaces on the left (or right with `-`), or
/// zeros between prefix and body when `0` is given and `zero_ok`.
fn pad(out: &mut Vec<u8>, s: &Spec, prefix: &str, body: &str, zero_ok: bool) {
    let len = prefix.len() + body.len();
    let fill = s.width.saturating_sub(len);
    if s.left {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(body.as_bytes());
        out.resize(out.len() + fill, b' ');
    } else if s.zero && zero_ok {
        out.extend_from_slice(prefix.as_bytes());
        out.resize(out.len() + fill, b'0');
        out.extend_from_slice(body.as_bytes());
    } else {
        out.resize(out.len() + fill, b' ');
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(body.as_bytes());
    }
}

fn pad_bytes(out: &mut Vec<u8>, s: &Spec, body: &[u8]) {
    let fill = s.width.saturating_sub(body.len());
    if !s.left {
        out.resize(out.len() + fill, b' ');
    }
    out.extend_from_slice(body);
    if s.left {
        out.resize(out.len() + fill, b' ');
    }
}

/// Sign, digits and whether zero padding applies (not for inf/nan) of a floating
/// conversion.
fn float_body(v: f64, conv: u8, s: &Spec) -> (&'static str, String, bool) {
    let sign = if v.is_sign_negative() {
        "-"
    } else if s.plus {
        "+"
    } else if s.space {
        " "
    } else {
        ""
    };
    let upper = conv.is_ascii_uppercase();
    let a = v.abs();
    if !a.is_finite() {
        let body = match (a.is_nan(), upper) {
            (true, false) => "nan",
            (true, true) => "NAN",
            (false, false) => "inf",
            (false, true) => "INF",
        };
        return (sign, body.to_string(), false);
    }
    let prec = s.prec.unwrap_or(6);
    let body = match conv.to_ascii_lowercase() {
        b'f' => fixed(a, prec, s.alt),
        b'e' => exponential(a, prec, s.alt, upper),
        _ => {
            let p = prec.max(1);
            let x = if a == 0.0 {
                0
            } else {
                exponent_after_rounding(a, p - 1)
            };
            let mut body = if x < p as i32 && x >= -4 {
                fixed(a, (p as i32 - 1 - x) as usize, s.alt)
            } else {
                exponential(a, p - 1, s.alt, upper)
            };
            if !s.alt {
                strip_zeros(&mut body);
            }
            body
        }
    };
    (sign, body, true)
}

fn fixed(a: f64, prec: usize, alt: bool) -> String {
    let mut s = format!("{a:.prec$}");
    if alt && prec == 0 {
        s.push('.');
    }
    s
}

/// The decimal exponent of `a` written in `%e` style with `prec` fraction digits.
fn exponent_after_rounding(a: f64, prec: usize) -> i32 {
    let s = format!("{a:.prec$e}");
    s.rsplit('e')
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0)
}

fn exponential(a: f64, prec: usize, alt: bool, upper: bool) -> String {
    let s = format!("{a:.prec$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut out = String::with_capacity(mant.len() + 5);
    out.push_str(mant);
    if alt && prec == 0 {
        out.push('.');
    }
    out.push(if upper { 'E' } else { 'e' });
    out.push(if exp < 0 { '-' } else { '+' });
    out.push_str(&format!("{:02}", exp.unsigned_abs()));
    out
}

/// `%g` without `#`: drop trailing zeros of the fraction, and the point if nothing is left.
fn strip_zeros(body: &mut String) {
    let (num, exp) = match body.find(['e', 'E']) {
        Some(i) => (body[..i].to_string(), body[i..].to_string()),
        None => (body.clone(), String::new()),
    };
    if !num.contains('.') {
        return;
    }
    let trimmed = num.trim_end_matches('0').trim_end_matches('.');
    *body = format!("{trimmed}{exp}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lays out `fmt` at 0x100 and the argument slots at 0x1000, formats, and returns the
    /// text and the bytes the call takes in the printf buffer.
    fn pf(fmt: &str, slots: &[u32]) -> (String, u64) {
        let mut wram = Box::new([0u8; WS]);
        wram[0x100..0x100 + fmt.len()].copy_from_slice(fmt.as_bytes());
        for (i, v) in slots.iter().enumerate() {
            let a = 0x1000 + 4 * i;
            wram[a..a + 4].copy_from_slice(&v.to_le_bytes());
        }
        wram[0x2000..0x2006].copy_from_slice(b"hello\0");
        let mut out = Vec::new();
        let n = format(&wram, &[], 0x100, 0x1000, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), n)
    }

    fn s(fmt: &str, slots: &[u32]) -> String {
        pf(fmt, slots).0
    }

    fn d(v: f64) -> [u32; 2] {
        let b = v.to_bits();
        [b as u32, (b >> 32) as u32]
    }

    /// Slots for one double preceded by nothing (already 8-aligned at 0x1000).
    fn fd(fmt: &str, v: f64) -> String {
        s(fmt, &d(v))
    }

    #[test]
    fn integers() {
        assert_eq!(
            s("%d|%i|%u", &[(-5i32) as u32, 7, u32::MAX]),
            "-5|7|4294967295"
        );
        assert_eq!(
            s("%5d|%-5d|%05d", &[42, 42, (-42i32) as u32]),
            "   42|42   |-0042"
        );
        assert_eq!(s("%+d|% d|%+d", &[3, 3, (-3i32) as u32]), "+3| 3|-3");
        assert_eq!(
            s("%x|%X|%#x|%#X|%#x", &[255, 255, 255, 255, 0]),
            "ff|FF|0xff|0XFF|0"
        );
        assert_eq!(s("%o|%#o|%#o", &[8, 8, 0]), "10|010|0");
        assert_eq!(
            s("%.3d|%.0d|%5.3d|%-6.2x|", &[7, 0, (-7i32) as u32, 10]),
            "007|| -007|0a    |"
        );
        assert_eq!(s("%08.3d", &[5]), "     005");
        assert_eq!(
            s("%hhd|%hd|%hhu|%hu", &[0x1ff, 0x18000, 0x1ff, 0x18000]),
            "-1|-32768|255|32768"
        );
        assert_eq!(s("%ld|%zu|%td", &[(-1i32) as u32, 5, 6]), "-1|5|6");
    }

    #[test]
    fn long_long_is_aligned() {
        // int at slot 0, padding at slot 1, long long in slots 2-3, int at slot 4.
        let v = -1234567890123i64 as u64;
        let (text, n) = pf("%d %lld %d", &[1, 0xdead, v as u32, (v >> 32) as u32, 9]);
        assert_eq!(text, "1 -1234567890123 9");
        // 13 bytes of format section ("%d", "%s", "%lld", "%s", "%d", NUL), 20 of arguments.
        assert_eq!(n, 40);
        assert_eq!(
            s("%llu %jx", &[u32::MAX, u32::MAX, 0, 1]),
            "18446744073709551615 100000000"
        );
    }

    #[test]
    fn star_width_and_precision() {
        assert_eq!(s("[%*d]", &[5, 42]), "[   42]");
        assert_eq!(s("[%*d]", &[(-5i32) as u32, 42]), "[42   ]");
        assert_eq!(s("[%.*d]", &[4, 42]), "[0042]");
        assert_eq!(s("[%.*d]", &[(-1i32) as u32, 42]), "[42]");
        assert_eq!(s("[%*.*s]", &[6, 3, 0x2000]), "[   hel]");
    }

    #[test]
    fn chars_strings_pointers() {
        assert_eq!(
            s(
                "%c%c|%3c|%-3c|",
                &[b'o' as u32, b'k' as u32, b'x' as u32, b'y' as u32]
            ),
            "ok|  x|y  |"
        );
        assert_eq!(
            s("%s|%.2s|%7s|%-7s|%s", &[0x2000, 0x2000, 0x2000, 0x2000, 0]),
            "hello|he|  hello|hello  |(null)"
        );
        assert_eq!(s("%p %p", &[0x1234, 0]), "0x1234 0x0");
        assert_eq!(s("100%% %y", &[]), "100% %y");
    }

    #[test]
    fn fixed_point() {
        assert_eq!(fd("%f", 1.2345675), "1.234568");
        assert_eq!(fd("%.2f", 2.675), "2.67"); // 2.675 is 2.67499999... in binary
        assert_eq!(fd("%.0f", 2.5), "2");
        assert_eq!(fd("%.0f", 3.5), "4");
        assert_eq!(fd("%#.0f", 3.0), "3.");
        assert_eq!(fd("%8.3f|", -1.5), "  -1.500|");
        assert_eq!(fd("%-8.1f|", 1.25), "1.2     |");
        assert_eq!(fd("%08.2f", -1.23456), "-0001.23");
        assert_eq!(fd("%+.1f", 0.0), "+0.0");
        assert_eq!(fd("%.1f", -0.0), "-0.0");
        assert_eq!(fd("%F", f64::INFINITY), "INF");
        assert_eq!(fd("%f", f64::NEG_INFINITY), "-inf");
        assert_eq!(fd("%05f", f64::NAN), "  nan");
        assert_eq!(fd("%.3f", 1e10), "10000000000.000");
    }

    #[test]
    fn exponent_form() {
        assert_eq!(fd("%e", 1234.5), "1.234500e+03");
        assert_eq!(fd("%.2e", 0.000123456), "1.23e-04");
        assert_eq!(fd("%E", 1e-300), "1.000000E-300");
        assert_eq!(fd("%.0e", 15.0), "2e+01");
        assert_eq!(fd("%#.0e", 1.0), "1.e+00");
        assert_eq!(fd("%e", 0.0), "0.000000e+00");
        assert_eq!(fd("%12.3e|", -9.9999), "  -1.000e+01|");
    }

    #[test]
    fn general_form() {
        assert_eq!(fd("%g", 100000.0), "100000");
        assert_eq!(fd("%g", 1000000.0), "1e+06");
        assert_eq!(fd("%g", 0.0001), "0.0001");
        assert_eq!(fd("%g", 0.00001), "1e-05");
        assert_eq!(fd("%g", 1.23456789), "1.23457");
        assert_eq!(fd("%.3g", 1.23456789), "1.23");
        assert_eq!(fd("%g", 0.0), "0");
        assert_eq!(fd("%.0g", 123.0), "1e+02");
        assert_eq!(fd("%#g", 1.0), "1.00000");
        assert_eq!(fd("%G", 1.5e-10), "1.5E-10");
        assert_eq!(fd("%g", 999999.5), "1e+06");
        assert_eq!(fd("%.2g", 9.96), "10");
        assert_eq!(fd("%10.4g|", 2.5), "       2.5|");
        assert_eq!(fd("%g", 123456789.0), "1.23457e+08");
    }

    #[test]
    fn mixed_float_and_int_slots() {
        // int in slot 0, pad slot 1, double in 2-3, int in 4.
        let [lo, hi] = d(0.5);
        let (t, n) = pf("%d %.1f %d", &[1, 0, lo, hi, 2]);
        assert_eq!(t, "1 0.5 2");
        assert_eq!(n, 40);
    }

    #[test]
    fn buffer_bytes_follow_the_runtime_encoding() {
        // (format section + NUL + argument section, in 8-byte lines, the last one always
        // written: a call of exactly 16 bytes takes 24.)
        for (fmt, slots, bytes) in [
            ("", &[][..], 8),           // 1 + 0
            ("abc", &[], 8),            // "%s" NUL, "abc" NUL: 3 + 4
            ("%d", &[1], 8),            // 3 + 4
            ("a%d", &[1], 16),          // "%s%d" NUL, "a" NUL 4 bytes: 5 + 6
            ("%d%d%c", &[1, 2, 3], 24), // 7 + 9 = 16
            ("%s", &[0x2000], 16),      // 3 + "hello" NUL
            ("%%|%zu", &[5], 16),       // "%s%u" NUL, "%|" NUL 4 bytes: 5 + 7
            ("%08.3f", &[0, 0], 16),    // "%08.3f" NUL, 8 bytes: 7 + 8
            ("%lx", &[1], 16),          // "%lx" NUL, 8 bytes (an `l` is 64-bit there)
        ] {
            assert_eq!(pf(fmt, slots).1, bytes, "{fmt:?}");
        }
    }

    #[test]
    fn reads_out_of_range_fault() {
        let wram = Box::new([b'a'; WS]); // no terminator before the end of WRAM
        let mut out = Vec::new();
        assert_eq!(
            format(&wram, &[], 0xfff0, 0x100, &mut out),
            Err(Fault::WramOutOfRange {
                addr: 0x1_0000,
                size: 1
            })
        );
    }

    #[test]
    fn output_is_bounded() {
        let mut wram = Box::new([0u8; WS]);
        let spec = b"%4096d";
        for k in 0..10_000 {
            wram[0x100 + 6 * k..0x100 + 6 * k + 6].copy_from_slice(spec);
        }
        let mut out = vec![b'x'; LOG_LIMIT - 1000];
        let r = format(&wram, &[], 0x100, 0, &mut out);
        assert_eq!(
            r,
            Err(Fault::PrintfOutputTooLarge {
                limit: LOG_LIMIT as u64
            })
        );
        assert_eq!(out.len(), LOG_LIMIT - 1000);
    }

    #[test]
    fn huge_width_is_clamped() {
        assert_eq!(s("%999999999d", &[1]).len(), MAX_FIELD);
    }
}
