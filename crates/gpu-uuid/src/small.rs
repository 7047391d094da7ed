//! A list that lives inline while short: a `CUDA_VISIBLE_DEVICES` value names a few devices,
//! and the validator reads one per call, so its entries need no heap allocation.

use std::fmt;

/// How many items stay inline: a mask names one device, or a few (more inline slots cost more
/// to set up and move than they save).
const INLINE: usize = 4;

/// Up to [`INLINE`] items inline, all of them on the heap beyond that.
#[derive(Clone)]
pub(crate) struct SmallList<T> {
    inline: [T; INLINE],
    len: usize,
    /// Every item once there are more than [`INLINE`]; empty until then.
    heap: Vec<T>,
}

impl<T: Copy + Default> SmallList<T> {
    pub(crate) fn new() -> Self {
        Self {
            inline: [T::default(); INLINE],
            len: 0,
            heap: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, item: T) {
        if let (true, Some(slot)) = (self.heap.is_empty(), self.inline.get_mut(self.len)) {
            *slot = item;
            self.len += 1;
        } else {
            if self.heap.is_empty() {
                self.heap.extend_from_slice(&self.inline);
            }
            self.heap.push(item);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.heap.clear();
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        if self.heap.is_empty() {
            self.inline.get(..self.len).unwrap_or_default()
        } else {
            &self.heap
        }
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for SmallList<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default + Eq> Eq for SmallList<T> {}

impl<T: Copy + Default + fmt::Debug> fmt::Debug for SmallList<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_every_item_in_order_across_the_spill() {
        let mut list = SmallList::new();
        let mut expected = Vec::new();
        for i in 0..20_u32 {
            list.push(i);
            expected.push(i);
            assert_eq!(list.as_slice(), expected.as_slice());
            if i == 10 {
                list.clear();
                expected.clear();
                assert!(list.as_slice().is_empty());
            }
        }
    }
}
