//! What a replica tells the others, and how it answers them, with `--redis-url`: a resource
//! a plugin said changed and a contribution a plugin turned on or off are published, and every
//! replica applies them as if its own plugin had said so (its subscribers and listen streams
//! hear them, its lists follow); requests about the tasks this replica runs are answered here.

use std::sync::{Arc, Weak};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    serve::{
        ServeState,
        generation::{
            availability::{Kind, Toggle},
            queue::Mirror,
        },
        mcp::tasks::TaskRequest,
    },
    shared::Shared,
};

/// An event one replica publishes for the others.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Event {
    /// A plugin said the resource `uri` changed.
    ResourceUpdated { uri: String },
    /// A plugin turned one of its contributions on or off.
    Toggled {
        plugin: String,
        what: String,
        name: String,
        available: bool,
    },
}

/// What publishes each resource update of this replica's plugins.
pub(crate) fn mirror_updates(shared: &Arc<Shared>) -> Mirror<String> {
    let shared = Arc::clone(shared);
    Arc::new(move |uri: &String| publish(&shared, &Event::ResourceUpdated { uri: uri.clone() }))
}

/// What publishes each contribution this replica's plugins turn on or off.
pub(crate) fn mirror_toggles(shared: &Arc<Shared>) -> Mirror<Toggle> {
    let shared = Arc::clone(shared);
    Arc::new(move |toggle: &Toggle| {
        publish(
            &shared,
            &Event::Toggled {
                plugin: toggle.plugin.clone(),
                what: toggle.kind.name().to_owned(),
                name: toggle.name.clone(),
                available: toggle.available,
            },
        );
    })
}

fn publish(shared: &Shared, event: &Event) {
    if let Ok(event) = serde_json::to_value(event) {
        shared.publish(event);
    }
}

/// Has `state` hear the other replicas' events and answer their requests through `shared`.
pub(crate) fn join(state: &Arc<ServeState>, shared: &Arc<Shared>) {
    let hearing = Arc::downgrade(state);
    shared.hear_with(Arc::new(move |event| hear(&hearing, event)));
    let answering = Arc::downgrade(state);
    shared.respond_with(Arc::new(move |request| {
        let answer = respond(&answering, request);
        Box::pin(std::future::ready(answer))
    }));
}

/// Applies another replica's event here, without publishing it again.
fn hear(state: &Weak<ServeState>, event: Value) {
    let Some(state) = state.upgrade() else { return };
    match serde_json::from_value::<Event>(event) {
        Ok(Event::ResourceUpdated { uri }) => state.updates.unmirrored().send(uri),
        Ok(Event::Toggled {
            plugin,
            what,
            name,
            available,
        }) => {
            let Some(kind) = Kind::from_name(&what) else {
                tracing::warn!("another replica turned a `{what}` on or off: unknown here");
                return;
            };
            state.availability.unmirrored().send(Toggle {
                plugin,
                kind,
                name,
                available,
            });
        }
        Err(error) => tracing::warn!("an event of another replica is not understood: {error}"),
    }
}

/// Answers another replica's request.
fn respond(state: &Weak<ServeState>, request: Value) -> Result<Value, String> {
    let state = state
        .upgrade()
        .ok_or_else(|| "this replica is stopping".to_owned())?;
    let Some(task) = request.get("task").cloned() else {
        return Err(format!("not a request this replica answers: {request}"));
    };
    let request: TaskRequest = serde_json::from_value(task).map_err(|e| e.to_string())?;
    request.answer(&state.tasks)
}
