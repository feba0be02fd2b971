//! A value built from the buffers a node binds (bind groups, sets of them), rebuilt only when
//! those buffers change: [`gpugraph_command::BindGroupCache`] for nodes that keep more than
//! one bind group per buffer set, or whose construction can fail.

use gpugraph_command::wgpu;

/// Caches one `T` keyed on the exact buffers it was built from. Prime it at node compile time
/// (with `cc.buffer(..)`) so an encode without import overrides allocates nothing.
#[derive(Debug)]
pub struct BufferKeyed<T> {
    key: Vec<wgpu::Buffer>,
    value: Option<T>,
}

impl<T> Default for BufferKeyed<T> {
    fn default() -> Self {
        Self {
            key: Vec::new(),
            value: None,
        }
    }
}

impl<T> BufferKeyed<T> {
    /// The cached value when `buffers` equal the key it was built from; otherwise the result
    /// of `create`, cached on success (a failure keeps nothing, so the next call retries).
    pub fn get_or_try_create<E>(
        &mut self,
        buffers: &[&wgpu::Buffer],
        create: impl FnOnce() -> Result<T, E>,
    ) -> Result<&T, E> {
        let same = self.value.is_some()
            && self.key.len() == buffers.len()
            && self.key.iter().zip(buffers).all(|(a, b)| a == *b);
        if !same {
            self.value = None;
            let value = create()?;
            self.key = buffers.iter().map(|b| (*b).clone()).collect();
            self.value = Some(value);
        }
        Ok(self
            .value
            .get_or_insert_with(|| unreachable!("value set above")))
    }

    /// [`Self::get_or_try_create`] for a `create` that cannot fail.
    pub fn get_or_create(&mut self, buffers: &[&wgpu::Buffer], create: impl FnOnce() -> T) -> &T {
        match self.get_or_try_create(buffers, || Ok::<T, std::convert::Infallible>(create())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }
}
