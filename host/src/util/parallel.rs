//! Mapping a list on every core, for work that reads and hashes whole files.

use std::num::NonZeroUsize;

/// `f` of each item, in the items' order, computed on up to as many threads as there are
/// cores (the calling thread is one of them).
pub(crate) fn map<T, R, F>(items: Vec<T>, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .min(items.len());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let per_thread = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        chunks.push(items.by_ref().take(per_thread).collect());
    }
    let f = &f;
    std::thread::scope(|scope| {
        let mut chunks = chunks.into_iter();
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|chunk| scope.spawn(move || chunk.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut results: Vec<R> = first.into_iter().map(f).collect();
        for other in others {
            match other.join() {
                Ok(done) => results.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        results
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_order_of_the_items() {
        let items: Vec<u32> = (0..1000).collect();
        let doubled = map(items, |i| i * 2);
        assert_eq!(doubled, (0..1000).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn maps_no_item_and_one_item() {
        assert!(map(Vec::<u8>::new(), |i| i).is_empty());
        assert_eq!(map(vec![7], |i| i + 1), vec![8]);
    }
}
