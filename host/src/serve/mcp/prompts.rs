//! Prompts over MCP for the active set of the request's URL: `prompts/list` and `prompts/get`
//! (an unknown prompt or a missing required argument is `-32602`).

use std::sync::Arc;

use rmcp::{
    ErrorData,
    model::{
        GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
        PromptMessage, PromptsCapability,
    },
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::contributions::{non_empty, open, parse, plugin_error};
use crate::serve::{
    generation::Generation,
    generation::availability::Hidden,
    host_context::{Call, Finished},
};
use crate::{registry::Registry, selection::ActiveSet};

/// What the server says of prompts: their list may change (when the plugins do).
pub(crate) fn prompts_capability() -> PromptsCapability {
    let mut capability = PromptsCapability::default();
    capability.list_changed = Some(true);
    capability
}

/// `prompts/list`: the prompts of the active set, but those their plugins turned off.
pub(crate) fn list_prompts(
    registry: &Registry,
    active: &ActiveSet,
    hidden: &Hidden,
) -> ListPromptsResult {
    let served = registry.served_prompts(active).into_iter();
    let prompts = served
        .filter(|p| !hidden.prompts.contains(&p.decl.name))
        .map(|p| {
            let d = &p.decl;
            let arguments = d
                .arguments
                .iter()
                .map(|a| {
                    let mut argument =
                        PromptArgument::new(a.name.clone()).with_required(a.required);
                    argument.description = non_empty(&a.description);
                    argument
                })
                .collect::<Vec<_>>();
            let mut prompt = Prompt::new(
                d.name.clone(),
                non_empty(&d.description),
                (!arguments.is_empty()).then_some(arguments),
            );
            prompt.title.clone_from(&d.title);
            prompt
        });
    ListPromptsResult::with_all_items(prompts.collect())
}

/// `prompts/get`: checks the arguments, then the plugin serving the prompt answers, as `call`.
pub(crate) async fn get_prompt(
    generation: &Generation,
    request: GetPromptRequestParams,
    call: Call<'_>,
) -> Result<Option<Finished<Result<GetPromptResult, ErrorData>>>, ErrorData> {
    let name = request.name.as_str();
    let prompt = generation
        .registry()
        .served_prompt(&call.resolution.active, name)
        .filter(|_| !generation.hidden().prompts.contains(name))
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!("Unknown prompt: {name}"),
                Some(json!({"name": name})),
            )
        })?;
    let arguments = request.arguments.unwrap_or_default();
    prompt
        .decl
        .check_arguments(|a| arguments.contains_key(a))
        .map_err(|missing| ErrorData::invalid_params(missing, None))?;
    let plugin = open(generation, &prompt.plugin).await?;
    let arguments = Value::Object(arguments).to_string();
    let mut call = call;
    call.plugin = Some(Arc::from(prompt.plugin.as_str()));
    let finished = call
        .run(|host| async {
            let json = plugin
                .get_prompt(name, arguments, host)
                .await
                .map_err(|e| plugin_error(e, None))?;
            #[derive(Deserialize)]
            struct Got {
                description: Option<String>,
                messages: Vec<PromptMessage>,
            }
            let got: Got = parse(&json, &prompt.plugin)?;
            let mut result = GetPromptResult::new(got.messages);
            result.description = got.description;
            Ok(result)
        })
        .await;
    Ok(finished)
}
