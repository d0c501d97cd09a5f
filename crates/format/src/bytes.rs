//! Little-endian field writers and readers for the variable-length formats
//! (the checkpoint blob, the write-ahead log's payloads). A [`Reader`] never
//! reads past its slice and checks every count against the bytes left before
//! anything is allocated for it; its errors name the structure being read.

use crate::FormatError;

/// Appends fields to a byte vector.
pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    /// A string: u16 length, then UTF-8.
    pub(crate) fn str(&mut self, s: &str) {
        debug_assert!(s.len() <= usize::from(u16::MAX), "string lengths are u16s");
        self.u16(s.len() as u16);
        self.0.extend_from_slice(s.as_bytes());
    }
    /// u32 count, then the u64s.
    pub(crate) fn u64s(&mut self, v: &[u64]) {
        self.u32(v.len() as u32);
        v.iter().for_each(|&x| self.u64(x));
    }
}

/// Reads fields from a byte slice.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    pub(crate) at: usize,
    structure: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8], structure: &'static str) -> Reader<'a> {
        Reader { b, at: 0, structure }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or(FormatError::Truncated {
            structure: self.structure,
            needed: self.at.saturating_add(n),
            found: self.b.len(),
        })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2")))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    /// A string written by [`Writer::str`].
    pub(crate) fn str(&mut self) -> Result<String, FormatError> {
        let n = usize::from(self.u16()?);
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| FormatError::InvalidField {
            structure: self.structure,
            field: "name",
            reason: "not UTF-8".into(),
        })
    }
    /// A count of items of `size` bytes each, checked against what is left.
    pub(crate) fn count(&mut self, n: u64, size: usize) -> Result<usize, FormatError> {
        let left = (self.b.len() - self.at) as u64;
        if n.saturating_mul(size as u64) > left {
            return Err(FormatError::Truncated {
                structure: self.structure,
                needed: self.at.saturating_add((n as usize).saturating_mul(size)),
                found: self.b.len(),
            });
        }
        Ok(n as usize)
    }
    /// u64s written by [`Writer::u64s`].
    pub(crate) fn u64s(&mut self) -> Result<Vec<u64>, FormatError> {
        let n = self.u32()?;
        let n = self.count(n.into(), 8)?;
        (0..n).map(|_| self.u64()).collect()
    }
    /// Fails unless every byte was read.
    pub(crate) fn finish(&self) -> Result<(), FormatError> {
        if self.at != self.b.len() {
            return Err(FormatError::InvalidField {
                structure: self.structure,
                field: "length",
                reason: format!("{} bytes after the end", self.b.len() - self.at),
            });
        }
        Ok(())
    }
}

/// A table's definition as the checkpoint and the log's create-table record
/// both hold it: `id u32, name (u16 length + UTF-8), layout descriptor (u32
/// length + bytes), column names (u16 count, then u16 length + UTF-8 each)`.
pub(crate) fn put_table_def(w: &mut Writer, id: u32, name: &str, layout_descriptor: &[u8], column_names: &[String]) {
    debug_assert!(column_names.len() <= usize::from(u16::MAX), "column counts are u16s");
    w.u32(id);
    w.str(name);
    w.u32(layout_descriptor.len() as u32);
    w.bytes(layout_descriptor);
    w.u16(column_names.len() as u16);
    column_names.iter().for_each(|c| w.str(c));
}

/// Reads what [`put_table_def`] wrote: (id, name, layout descriptor, column names).
pub(crate) fn take_table_def(r: &mut Reader<'_>) -> Result<(u32, String, Vec<u8>, Vec<String>), FormatError> {
    let id = r.u32()?;
    let name = r.str()?;
    let n = r.u32()?;
    let n = r.count(n.into(), 1)?;
    let layout_descriptor = r.take(n)?.to_vec();
    let cols = r.u16()?;
    let column_names = (0..cols).map(|_| r.str()).collect::<Result<_, _>>()?;
    Ok((id, name, layout_descriptor, column_names))
}
