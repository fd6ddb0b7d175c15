//! CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) for store headers and checkpoints:
//! what detects a damaged or truncated file before its bytes are trusted.

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = table();

/// A running CRC-32.
#[derive(Debug, Clone, Copy)]
pub struct Crc32(u32);

impl Default for Crc32 {
    fn default() -> Self {
        Crc32(0xFFFF_FFFF)
    }
}

impl Crc32 {
    /// Adds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        let mut c = self.0;
        for b in bytes {
            c = TABLE[((c ^ u32::from(*b)) & 0xff) as usize] ^ (c >> 8);
        }
        self.0 = c;
    }

    /// The checksum of everything added.
    pub fn finish(self) -> u32 {
        !self.0
    }
}

/// The CRC-32 of `bytes`.
///
/// ```
/// assert_eq!(openpim_machine::crc32(b"123456789"), 0xCBF4_3926);
/// ```
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = Crc32::default();
    c.update(bytes);
    c.finish()
}
