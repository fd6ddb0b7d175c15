//! Element types and reduction operators, on little-endian bytes (the DPUs' byte order).

use crate::error::{Error, Result};

/// The element type, by size in bytes (PID-Comm's `size`). Signed and unsigned sums are the
/// same bits (wrap-around); `max` compares as signed, as PID-Comm does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    I8,
    I16,
    I32,
    I64,
}

impl ElemType {
    /// From PID-Comm's `size` parameter.
    pub fn from_size(size: u32) -> Result<ElemType> {
        match size {
            1 => Ok(ElemType::I8),
            2 => Ok(ElemType::I16),
            4 => Ok(ElemType::I32),
            8 => Ok(ElemType::I64),
            _ => Err(Error::invalid(
                "size",
                format!("{size}: the element size is 1, 2, 4 or 8 bytes (int8/16/32/64 and their unsigned types)"),
            )),
        }
    }

    pub fn bytes(self) -> usize {
        match self {
            ElemType::I8 => 1,
            ElemType::I16 => 2,
            ElemType::I32 => 4,
            ElemType::I64 => 8,
        }
    }
}

/// The reduction operator (PID-Comm's `reduce_type`: 0 sum, 1 max).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
}

impl ReduceOp {
    pub fn from_code(code: u32) -> Result<ReduceOp> {
        match code {
            0 => Ok(ReduceOp::Sum),
            1 => Ok(ReduceOp::Max),
            _ => Err(Error::invalid(
                "reduce_type",
                format!("{code}: 0 for sum, 1 for max"),
            )),
        }
    }
}

macro_rules! reduce_as {
    ($t:ty, $acc:expr, $src:expr, $op:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        let it = $acc.chunks_exact_mut(N).zip($src.chunks_exact(N));
        match $op {
            ReduceOp::Sum => {
                for (a, b) in it {
                    let v = <$t>::from_le_bytes(a.try_into().unwrap())
                        .wrapping_add(<$t>::from_le_bytes(b.try_into().unwrap()));
                    a.copy_from_slice(&v.to_le_bytes());
                }
            }
            ReduceOp::Max => {
                for (a, b) in it {
                    let v = <$t>::from_le_bytes(a.try_into().unwrap())
                        .max(<$t>::from_le_bytes(b.try_into().unwrap()));
                    a.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }};
}

/// `acc[i] = acc[i] op src[i]` element by element (equal lengths, whole elements).
pub fn reduce_into(acc: &mut [u8], src: &[u8], ty: ElemType, op: ReduceOp) {
    debug_assert_eq!(acc.len(), src.len());
    match ty {
        ElemType::I8 => reduce_as!(i8, acc, src, op),
        ElemType::I16 => reduce_as!(i16, acc, src, op),
        ElemType::I32 => reduce_as!(i32, acc, src, op),
        ElemType::I64 => reduce_as!(i64, acc, src, op),
    }
}

/// `acc op= src` on one 64-bit word holding whole elements (sums lane-wise without carries
/// across elements; max element by element).
#[inline]
pub fn reduce_word(acc: u64, src: u64, ty: ElemType, op: ReduceOp) -> u64 {
    match (ty, op) {
        (ElemType::I64, ReduceOp::Sum) => acc.wrapping_add(src),
        (_, ReduceOp::Sum) => {
            let high = match ty {
                ElemType::I8 => 0x8080_8080_8080_8080u64,
                ElemType::I16 => 0x8000_8000_8000_8000,
                _ => 0x8000_0000_8000_0000,
            };
            ((acc & !high).wrapping_add(src & !high)) ^ ((acc ^ src) & high)
        }
        (_, ReduceOp::Max) => {
            let mut a = acc.to_le_bytes();
            reduce_into(&mut a, &src.to_le_bytes(), ty, op);
            u64::from_le_bytes(a)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_wrap_and_max_is_signed() {
        let mut a = [0x7fu8, 0xff, 1, 0];
        reduce_into(&mut a, &[1, 1, 1, 0], ElemType::I8, ReduceOp::Sum);
        assert_eq!(a, [0x80, 0, 2, 0]);
        let mut a = (-5i32).to_le_bytes();
        reduce_into(&mut a, &3i32.to_le_bytes(), ElemType::I32, ReduceOp::Max);
        assert_eq!(i32::from_le_bytes(a), 3);
        assert_eq!(reduce_word(u64::MAX, 2, ElemType::I64, ReduceOp::Sum), 1);
        assert!(ElemType::from_size(3)
            .unwrap_err()
            .to_string()
            .starts_with("size:"));
        assert!(ReduceOp::from_code(2)
            .unwrap_err()
            .to_string()
            .starts_with("reduce_type:"));
    }
}
