//! `completion/complete` for a prompt's or a resource template's argument served to the
//! request's URL; an argument its plugin does not complete gets no values, without opening
//! anything.

use rmcp::{
    ErrorData,
    model::{CompleteRequestParams, CompleteResult, CompletionInfo},
};
use tokio_util::sync::CancellationToken;

use super::contributions::{open, parse, plugin_error, until_cancelled};
use crate::serve::generation::Generation;
use crate::{registry::CompletionOwner, selection::ActiveSet};

/// `completion/complete`: the plugin of the prompt or template completes the argument (one its
/// plugin turned off is unknown).
pub(crate) async fn complete(
    generation: &Generation,
    active: &ActiveSet,
    request: CompleteRequestParams,
    cancel: &CancellationToken,
) -> Result<CompleteResult, ErrorData> {
    let reference = serde_json::to_value(&request.r#ref)
        .and_then(serde_json::from_value)
        .map_err(|e| ErrorData::invalid_params(format!("invalid reference: {e}"), None))?;
    let owner = if generation.hidden().hides(&reference) {
        CompletionOwner::Unknown
    } else {
        generation
            .registry()
            .completion_owner(active, &reference, &request.argument.name)
    };
    let plugin = match owner {
        CompletionOwner::Unknown => {
            return Err(ErrorData::invalid_params(
                format!("Unknown {reference}: nothing here to complete"),
                None,
            ));
        }
        CompletionOwner::Nobody => return Ok(CompleteResult::default()),
        CompletionOwner::Plugin(plugin) => plugin,
    };
    let loaded = open(generation, plugin).await?;
    let request = serde_json::to_string(&request).unwrap_or_default();
    let json = until_cancelled(cancel, loaded.complete(request))
        .await
        .map_err(|e| plugin_error(e, None))?;
    let completion: CompletionInfo = parse(&json, plugin)?;
    Ok(CompleteResult::new(completion))
}
