//! A whole DPU set in one checkpoint file (OpenPIM's own format, beyond the SDK).
//!
//! Layout (little-endian):
//! - header: `OPENPIM-CHECKPT1`, then DPU count, page size, MRAM, WRAM and IRAM sizes (u32
//!   each), the hardware profile's name (u16 length + bytes), CRC-32 of all of it;
//! - one record per DPU, in set order: `DPU:`, index, faulted (u8), WRAM and IRAM images
//!   (u32 length + bytes, trailing zeros left out), page count, then per MRAM page that is not
//!   zero: its index (u32) and either `0` + the page's bytes (a new page) or `1` + the number
//!   of an earlier new page with the same bytes at the same index (dedup: a broadcast or a
//!   program's MRAM data is stored once for the whole set); CRC-32 of the record;
//! - trailer: `END:`, new pages, referenced pages (u32 each), CRC-32 of the trailer.
//!
//! Pages that are zero — never written — are not stored. A restore checks every checksum
//! before it changes any DPU, and writes into each DPU only the pages that differ from what
//! it holds.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use openpim_machine::{map, Crc32};

use crate::error::{Error, Result};

const MAGIC: &[u8; 16] = b"OPENPIM-CHECKPT1";
/// Bytes of the pages MRAM is stored in.
pub(crate) const PAGE: usize = 4096;

/// What a checkpoint file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub dpus: u32,
    pub page_bytes: u32,
    pub mram_bytes: u32,
    pub hardware: String,
    /// Pages stored with their bytes.
    pub new_pages: u64,
    /// Pages stored as a reference to an equal earlier page.
    pub referenced_pages: u64,
    /// DPUs whose last launch had faulted.
    pub faulted: u32,
    /// DPUs saved with a program's code in IRAM.
    pub with_program: u32,
    pub file_bytes: u64,
}

impl Summary {
    /// MRAM bytes the file stands for (pages that are not zero, all DPUs).
    pub fn mram_data_bytes(&self) -> u64 {
        (self.new_pages + self.referenced_pages) * u64::from(self.page_bytes)
    }
}

fn bad(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Checkpoint(format!(
        "checkpoint file {} is damaged or not a checkpoint: {what}; it was not used",
        path.display()
    ))
}

fn io(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::Checkpoint(format!("checkpoint file {}: {what}: {e}", path.display()))
}

/// A writer that keeps a running CRC of what goes through it.
struct CrcWriter<W: Write> {
    inner: W,
    crc: Crc32,
    written: u64,
}

impl<W: Write> CrcWriter<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc.update(bytes);
        self.written += bytes.len() as u64;
        self.inner.write_all(bytes)
    }
    fn u32(&mut self, v: u32) -> std::io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    /// Writes the CRC of everything since the last seal, and starts a new one.
    fn seal(&mut self) -> std::io::Result<()> {
        let c = std::mem::take(&mut self.crc).finish();
        self.written += 4;
        self.inner.write_all(&c.to_le_bytes())
    }
}

/// A reader that keeps a running CRC and the offset.
struct CrcReader<R: Read> {
    inner: R,
    crc: Crc32,
    offset: u64,
}

impl<R: Read> CrcReader<R> {
    fn take(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_exact(buf)?;
        self.crc.update(buf);
        self.offset += buf.len() as u64;
        Ok(())
    }
    fn u32(&mut self) -> std::io::Result<u32> {
        let mut b = [0u8; 4];
        self.take(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn u16(&mut self) -> std::io::Result<u16> {
        let mut b = [0u8; 2];
        self.take(&mut b)?;
        Ok(u16::from_le_bytes(b))
    }
    fn u8(&mut self) -> std::io::Result<u8> {
        let mut b = [0u8; 1];
        self.take(&mut b)?;
        Ok(b[0])
    }
    fn bytes(&mut self, limit: usize) -> std::io::Result<Vec<u8>> {
        let n = self.u32()? as usize;
        if n > limit {
            return Err(std::io::Error::other(format!(
                "an image of {n} bytes, more than the {limit} its memory holds"
            )));
        }
        let mut v = vec![0u8; n];
        self.take(&mut v)?;
        Ok(v)
    }
    /// Reads a stored CRC and checks it against the running one; starts a new one.
    fn check(&mut self, what: &str) -> std::result::Result<(), String> {
        let want = std::mem::take(&mut self.crc).finish();
        let mut b = [0u8; 4];
        self.inner
            .read_exact(&mut b)
            .map_err(|_| format!("truncated in the {what}"))?;
        self.offset += 4;
        let got = u32::from_le_bytes(b);
        if got != want {
            return Err(format!(
                "checksum of the {what} is {got:08x}, its contents give {want:08x}"
            ));
        }
        Ok(())
    }
}

fn trimmed(v: &[u8]) -> &[u8] {
    let end = v.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    &v[..end]
}

/// Writes a checkpoint file, one DPU at a time ([`Writer::dpu`]), from wherever the DPUs'
/// images come from: a set's transfers (`sdk::checkpoint::save_file`) or a rank's memories (the daemon
/// suspending a tenant's rank, `exec::local::suspend`).
pub(crate) struct Writer {
    path: std::path::PathBuf,
    tmp: std::path::PathBuf,
    w: CrcWriter<BufWriter<File>>,
    summary: Summary,
    /// The last new page seen at each page index, and its number: equal pages of later DPUs
    /// are stored as references to it.
    reference: Vec<u8>,
    reference_id: Vec<Option<u32>>,
    next_id: u32,
    next_dpu: u32,
}

impl Writer {
    /// Starts `path` (written as `path.partial`, put in place by [`Writer::finish`]) for
    /// `dpus` DPUs of `hardware`.
    pub(crate) fn create(path: &Path, dpus: u32, hardware: &str) -> Result<Writer> {
        let tmp = path.with_extension("partial");
        let file = File::create(&tmp).map_err(|e| io(path, "cannot create it", e))?;
        let mut w = Writer {
            path: path.to_path_buf(),
            tmp,
            w: CrcWriter {
                inner: BufWriter::with_capacity(1 << 20, file),
                crc: Crc32::default(),
                written: 0,
            },
            summary: Summary {
                dpus,
                page_bytes: PAGE as u32,
                mram_bytes: map::MRAM_SIZE,
                hardware: hardware.to_string(),
                ..Summary::default()
            },
            reference: vec![0u8; map::MRAM_SIZE as usize],
            reference_id: vec![None; map::MRAM_SIZE as usize / PAGE],
            next_id: 0,
            next_dpu: 0,
        };
        let mut head = || -> std::io::Result<()> {
            w.w.put(MAGIC)?;
            for v in [
                dpus,
                PAGE as u32,
                map::MRAM_SIZE,
                map::WRAM_SIZE,
                map::IRAM_SIZE,
            ] {
                w.w.u32(v)?;
            }
            let hw = hardware.as_bytes();
            w.w.put(&(hw.len() as u16).to_le_bytes())?;
            w.w.put(hw)?;
            w.w.seal()
        };
        head().map_err(|e| io(path, "cannot write it", e))?;
        Ok(w)
    }

    /// The next DPU's record: its fault flag and memories (`iram` empty: no program; `mram`
    /// all of MRAM).
    pub(crate) fn dpu(
        &mut self,
        faulted: bool,
        wram: &[u8],
        iram: &[u8],
        mram: &[u8],
    ) -> Result<()> {
        assert_eq!(mram.len(), map::MRAM_SIZE as usize, "a whole MRAM image");
        let index = self.next_dpu;
        self.next_dpu += 1;
        self.summary.faulted += u32::from(faulted);
        self.summary.with_program += u32::from(!trimmed(iram).is_empty());
        let pages = mram.len() / PAGE;
        let nonzero: Vec<usize> = (0..pages)
            .filter(|p| mram[p * PAGE..(p + 1) * PAGE].iter().any(|b| *b != 0))
            .collect();
        let (w, summary) = (&mut self.w, &mut self.summary);
        let (reference, reference_id) = (&mut self.reference, &mut self.reference_id);
        let next_id = &mut self.next_id;
        let mut rec = || -> std::io::Result<()> {
            w.put(b"DPU:")?;
            w.u32(index)?;
            w.put(&[u8::from(faulted)])?;
            let wr = trimmed(wram);
            w.u32(wr.len() as u32)?;
            w.put(wr)?;
            let ir = trimmed(iram);
            w.u32(ir.len() as u32)?;
            w.put(ir)?;
            w.u32(nonzero.len() as u32)?;
            for &p in &nonzero {
                let bytes = &mram[p * PAGE..(p + 1) * PAGE];
                w.u32(p as u32)?;
                match reference_id[p] {
                    Some(id) if &reference[p * PAGE..(p + 1) * PAGE] == bytes => {
                        w.put(&[1])?;
                        w.u32(id)?;
                        summary.referenced_pages += 1;
                    }
                    _ => {
                        w.put(&[0])?;
                        w.put(bytes)?;
                        reference[p * PAGE..(p + 1) * PAGE].copy_from_slice(bytes);
                        reference_id[p] = Some(*next_id);
                        *next_id += 1;
                        summary.new_pages += 1;
                    }
                }
            }
            w.seal()
        };
        rec().map_err(|e| io(&self.path, "cannot write it", e))
    }

    /// Writes the trailer, makes the file durable and puts it in place.
    pub(crate) fn finish(mut self) -> Result<Summary> {
        let path = self.path.clone();
        if self.next_dpu != self.summary.dpus {
            return Err(Error::Internal(format!(
                "checkpoint {}: {} DPU records written of {}",
                path.display(),
                self.next_dpu,
                self.summary.dpus
            )));
        }
        let (w, summary) = (&mut self.w, &self.summary);
        let mut trailer = || -> std::io::Result<()> {
            w.put(b"END:")?;
            w.u32(summary.new_pages as u32)?;
            w.u32(summary.referenced_pages as u32)?;
            w.seal()?;
            w.inner.flush()?;
            w.inner.get_ref().sync_all()
        };
        trailer().map_err(|e| io(&path, "cannot write it", e))?;
        self.summary.file_bytes = self.w.written;
        std::fs::rename(&self.tmp, &path).map_err(|e| io(&path, "cannot put it in place", e))?;
        Ok(std::mem::take(&mut self.summary))
    }
}

impl Drop for Writer {
    /// An unfinished file is removed (the partial file; a finished one was renamed).
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// One DPU record as read back.
pub(crate) struct Record {
    pub faulted: bool,
    pub wram: Vec<u8>,
    pub iram: Vec<u8>,
    /// (page index, page bytes) with references resolved.
    pub pages: Vec<(u32, Vec<u8>)>,
}

/// Reads a checkpoint file: the header, then each record (its checksum checked, then given to
/// `each`), then the trailer.
pub(crate) fn read(
    path: &Path,
    mut each: impl FnMut(u32, Record) -> Result<()>,
) -> Result<Summary> {
    let file = File::open(path).map_err(|e| io(path, "cannot open it", e))?;
    let file_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let pread = file
        .try_clone()
        .map_err(|e| io(path, "cannot open it", e))?;
    let mut r = CrcReader {
        inner: BufReader::with_capacity(1 << 20, file),
        crc: Crc32::default(),
        offset: 0,
    };
    let trunc = |what: &str| bad(path, format!("truncated in the {what}"));
    let mut magic = [0u8; 16];
    r.take(&mut magic).map_err(|_| trunc("header"))?;
    if &magic != MAGIC {
        return Err(bad(path, "it does not start with OPENPIM-CHECKPT1"));
    }
    let mut head = [0u32; 5];
    for h in &mut head {
        *h = r.u32().map_err(|_| trunc("header"))?;
    }
    let [dpus, page, mram, wram, iram] = head;
    let hw_len = r.u16().map_err(|_| trunc("header"))?;
    let mut hw = vec![0u8; hw_len as usize];
    r.take(&mut hw).map_err(|_| trunc("header"))?;
    r.check("header").map_err(|e| bad(path, e))?;
    if page as usize != PAGE
        || mram != map::MRAM_SIZE
        || wram != map::WRAM_SIZE
        || iram != map::IRAM_SIZE
    {
        return Err(Error::Checkpoint(format!(
            "checkpoint file {} was made for DPUs with {mram} bytes of MRAM, {wram} of WRAM, {iram} of IRAM ({page}-byte pages); these DPUs have {}, {}, {}",
            path.display(),
            map::MRAM_SIZE,
            map::WRAM_SIZE,
            map::IRAM_SIZE
        )));
    }
    let mut summary = Summary {
        dpus,
        page_bytes: page,
        mram_bytes: mram,
        hardware: String::from_utf8_lossy(&hw).into_owned(),
        file_bytes,
        ..Summary::default()
    };
    // File offset of each new page, to resolve references.
    let mut new_at: Vec<u64> = Vec::new();
    let pages_per_dpu = map::MRAM_SIZE / page;
    for k in 0..dpus {
        let what = format!("record of DPU {k}");
        let mut rec = || -> std::io::Result<Record> {
            let mut tag = [0u8; 4];
            r.take(&mut tag)?;
            if &tag != b"DPU:" {
                return Err(std::io::Error::other("no record tag"));
            }
            let index = r.u32()?;
            if index != k {
                return Err(std::io::Error::other(format!("DPU {index} out of order")));
            }
            let faulted = r.u8()? != 0;
            let wram = r.bytes(map::WRAM_SIZE as usize)?;
            let iram = r.bytes(map::IRAM_SIZE as usize)?;
            let n = r.u32()?;
            if n > pages_per_dpu {
                return Err(std::io::Error::other("more pages than MRAM holds"));
            }
            let mut pages = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let p = r.u32()?;
                if p >= pages_per_dpu {
                    return Err(std::io::Error::other(format!("page {p} beyond MRAM")));
                }
                let mut bytes = vec![0u8; PAGE];
                match r.u8()? {
                    0 => {
                        new_at.push(r.offset);
                        r.take(&mut bytes)?;
                    }
                    1 => {
                        let id = r.u32()?;
                        let at = *new_at.get(id as usize).ok_or_else(|| {
                            std::io::Error::other(format!("reference to page {id} not yet stored"))
                        })?;
                        pread.read_exact_at(&mut bytes, at)?;
                        summary.referenced_pages += 1;
                    }
                    other => {
                        return Err(std::io::Error::other(format!("page kind {other}")));
                    }
                }
                pages.push((p, bytes));
            }
            Ok(Record {
                faulted,
                wram,
                iram,
                pages,
            })
        };
        let record = rec().map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                trunc(&what)
            } else {
                bad(path, format!("{what}: {e}"))
            }
        })?;
        r.check(&what).map_err(|e| bad(path, e))?;
        summary.faulted += u32::from(record.faulted);
        summary.with_program += u32::from(!record.iram.is_empty());
        each(k, record)?;
    }
    summary.new_pages = new_at.len() as u64;
    let mut tag = [0u8; 4];
    r.take(&mut tag).map_err(|_| trunc("trailer"))?;
    let new = r.u32().map_err(|_| trunc("trailer"))?;
    let refs = r.u32().map_err(|_| trunc("trailer"))?;
    r.check("trailer").map_err(|e| bad(path, e))?;
    if &tag != b"END:"
        || u64::from(new) != summary.new_pages
        || u64::from(refs) != summary.referenced_pages
    {
        return Err(bad(path, "its trailer does not match its records"));
    }
    let mut extra = [0u8; 1];
    if r.inner.read(&mut extra).unwrap_or(0) != 0 {
        return Err(bad(path, "bytes after the trailer"));
    }
    Ok(summary)
}

/// Reads and checks a checkpoint file without using it (`openpim checkpoint inspect`).
pub fn inspect(path: &Path) -> Result<Summary> {
    read(path, |_, _| Ok(()))
}
