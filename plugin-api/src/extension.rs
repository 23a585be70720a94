//! Extending another plugin's tool with code: the [`Original`] handler an extension receives
//! and the [`Wrapped`] handler it answers.
//!
//! What an extension changes statically (description, title, annotations, meta, input schema)
//! and its place in the order are declared with `#[extend(...)]` and written into the manifest
//! by the `#[plugin]` attribute; this module is only the code side. The host hands the
//! extension the target tool's handler (possibly already wrapped by extensions applied
//! before); the ABI plumbing (`catch_unwind`, turning a [`Wrapped`] into an ABI object) is in
//! `plugin.rs`.

use std::{future::Future, sync::Arc};

use abi_stable::std_types::{RResult, RString};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    context::Context,
    error::{ErrorKind, FfiError, ToolError},
    ffi::detached_host,
    ffi::{FfiOutput, ToolHandlerBox},
    result::{IntoToolOutput, ToolOutput},
    tool::Handler,
};

/// The handler of the tool an extension wraps: call it (or not) from the [`Wrapped`] handler.
///
/// Cloning is cheap (it shares the handler). Errors of the original keep their kind: a call
/// with arguments it rejects is an invalid-arguments error, a panic in it is a panic.
///
/// ```no_run
/// # async fn example(original: plugin_api::Original) -> Result<(), plugin_api::ToolError> {
/// use plugin_api::json;
///
/// let record = original.call(json!({"sandbox_name": "a", "variant": "gpu"})).await?;
/// assert_eq!(record["variant"], "gpu");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Original {
    tool: Arc<str>,
    handler: Arc<ToolHandlerBox>,
}

impl std::fmt::Debug for Original {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Original")
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl Original {
    pub(crate) fn new(tool: Arc<str>, handler: ToolHandlerBox) -> Self {
        Self {
            tool,
            handler: Arc::new(handler),
        }
    }

    /// The name of the tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Calls the tool with these arguments (a JSON object) and returns its result: its value,
    /// or the `CallToolResult` JSON of a tool that builds its own [`crate::ToolResult`].
    ///
    /// The call shares the context of the call the wrapper is serving ([`Context::current`]):
    /// the tool's logs and progress go to the same client, and it is cancelled with it.
    pub async fn call(&self, arguments: Value) -> Result<Value, ToolError> {
        self.call_output(arguments).await.map(ToolOutput::into_json)
    }

    /// Calls the tool and returns its answer with its kind kept: return it from the wrapper to
    /// pass the answer on unchanged, whether a value or a [`crate::ToolResult`].
    pub async fn call_output(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        let output = self.call_ffi(arguments.to_string()).await?;
        ToolOutput::from_ffi(&output, &self.tool)
    }

    /// Calls the tool with arguments already serialised as a JSON object, and returns its
    /// answer as JSON text (as [`Original::call`] reads it): no parsing on either side.
    pub async fn call_json(&self, arguments: impl Into<String>) -> Result<String, ToolError> {
        self.call_ffi(arguments.into())
            .await
            .map(|output| output.json.into())
    }

    /// Calls the tool with the current call's context; when that call is cancelled, the tool's
    /// call is dropped at once (which cancels it too) and this answers a cancellation error.
    async fn call_ffi(&self, arguments: String) -> Result<FfiOutput, ToolError> {
        let current = Context::current();
        let host = current
            .as_ref()
            .map_or_else(detached_host, |c| c.host().clone());
        let call = self.handler.call(RString::from(arguments), host);
        let outcome = match current {
            Some(context) => tokio::select! {
                outcome = call => outcome,
                () = context.cancelled() => RResult::RErr(FfiError::new(
                    ErrorKind::Cancelled,
                    format!("tool {} was cancelled", self.tool),
                )),
            },
            None => call.await,
        };
        outcome.into_result().map_err(ToolError::from_ffi)
    }
}

/// The handler an extension answers in place of the original, built like a tool's: typed
/// arguments in, anything `Serialize` out.
///
/// The arguments are those of the extension's `input_schema` when it gives one (the host checks
/// them against it before calling), else the original tool's.
///
/// ```
/// use plugin_api::{Original, ToolError, Wrapped, json};
/// use serde_json::Value;
///
/// // Fill in an argument, then let the original tool answer.
/// fn on_gpu(original: Original) -> Wrapped {
///     Wrapped::asynchronous(move |mut arguments: Value| {
///         let original = original.clone();
///         async move {
///             arguments["variant"] = json!("gpu");
///             original.call(arguments).await
///         }
///     })
/// }
///
/// // Answer without the original at all.
/// fn canned(_original: Original) -> Wrapped {
///     Wrapped::sync(|_: Value| Ok::<_, ToolError>(json!([])))
/// }
/// # let _ = (on_gpu, canned);
/// ```
pub struct Wrapped(pub(crate) Handler);

impl std::fmt::Debug for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wrapped").finish_non_exhaustive()
    }
}

impl Wrapped {
    /// A synchronous handler, run on the extending plugin's blocking pool.
    pub fn sync<A, R, F>(f: F) -> Self
    where
        A: DeserializeOwned,
        R: IntoToolOutput,
        F: Fn(A) -> Result<R, ToolError> + Send + Sync + 'static,
    {
        Self(Handler::sync(f))
    }

    /// A synchronous handler run on the thread that polls the call, like `#[tool(inline)]`:
    /// only for a handler that returns in microseconds and never blocks.
    pub fn inline<A, R, F>(f: F) -> Self
    where
        A: DeserializeOwned,
        R: IntoToolOutput,
        F: Fn(A) -> Result<R, ToolError> + Send + Sync + 'static,
    {
        Self(Handler::inline(f))
    }

    /// An asynchronous handler, polled in place with the extending plugin's runtime entered;
    /// this is the one that
    /// can `await` [`Original::call`].
    pub fn asynchronous<A, R, F, Fut>(f: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        R: IntoToolOutput,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        Self(Handler::asynchronous(f))
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::mpsc,
        time::{Duration, Instant},
    };

    use abi_stable::{sabi_trait::TD_Opaque, std_types::RArc};

    use super::*;
    use crate::{
        ffi::{HostContextBox, ToolHandler},
        runtime::{CallFuture, in_place},
    };

    /// A tool that waits for its cancellation and says when it saw it.
    struct Waits(mpsc::Sender<Instant>);

    impl ToolHandler for Waits {
        fn call(&self, _arguments: RString, context: HostContextBox) -> CallFuture {
            let seen = self.0.clone();
            let context = Context::new(context, Arc::from("inner"));
            let waiting = context.clone();
            in_place(
                "inner".into(),
                context,
                Box::pin(async move {
                    waiting.cancelled().await;
                    seen.send(Instant::now()).unwrap();
                    Err(ToolError::new("cancelled"))
                }),
            )
        }
    }

    #[test]
    fn the_original_is_cancelled_with_the_call_it_serves() {
        let (seen, saw) = mpsc::channel();
        let original = Original::new(
            "inner".into(),
            ToolHandlerBox::from_ptr(RArc::new(Waits(seen)), TD_Opaque),
        );
        let outer = in_place(
            "outer".into(),
            Context::detached(),
            Box::pin(async move { original.call(Value::Null).await?.into_output() }),
        );
        std::thread::sleep(Duration::from_millis(20));
        let cancelled = Instant::now();
        drop(outer);
        let noticed = saw.recv_timeout(Duration::from_secs(1)).unwrap();
        assert!(
            noticed.duration_since(cancelled) < Duration::from_millis(500),
            "not within the outer call's grace period"
        );
    }
}
