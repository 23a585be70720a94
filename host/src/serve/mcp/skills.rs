//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): `skills/list`,
//! `skills/get`, and each skill's files as `skill://` resources, from what discovery read
//! beside the plugins and in bridged servers' cached listings ([`crate::discovery::skills`]),
//! scoped as tools are: a request is served the skills of the plugins and servers with a
//! toolset in its active set (its caller's bound already applied). Nothing is opened, but to
//! get a bridged server's skill or read one of its files: those are relayed to the server
//! under its own URIs (`crate::discovery::servers::skills`).

use rmcp::ErrorData;
use rmcp::model::{
    GetSkillResult, JsonObject, ReadResourceResult, Resource, SKILLS_EXTENSION_ID,
    ServerCapabilities, Skill,
};

use super::contributions::{open, plugin_error};
use crate::call::CallError;
use crate::discovery::servers::skills::served_uri;
use crate::selection::ActiveSet;
use crate::serve::generation::Generation;

/// The skills `active` is served, ordered by URI.
pub(super) fn visible(generation: &Generation, active: &ActiveSet) -> Vec<Skill> {
    generation.skills_for(active)
}

/// The entry of the skill `uri`, if `active` is served it: a bridged server's from the server
/// (started when needed), a plugin's as discovery read it.
pub(super) async fn get(
    generation: &Generation,
    active: &ActiveSet,
    uri: &str,
) -> Result<GetSkillResult, ErrorData> {
    let listed = visible(generation, active)
        .into_iter()
        .find(|s| s.uri == uri)
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "unknown skill {uri}: no plugin or server of this URL's toolsets has a skill there"
                ),
                None,
            )
        })?;
    let Some((server, own)) = relayed(generation, active, uri) else {
        return Ok(GetSkillResult::new(listed));
    };
    let plugin = open(generation, &server).await?;
    let Some(process) = plugin.process() else {
        return Ok(GetSkillResult::new(listed));
    };
    let skill =
        (process.get_skill(&own).await).map_err(|e| plugin_error(CallError::from(e), Some(uri)))?;
    Ok(GetSkillResult::new(skill))
}

/// The `SKILL.md` resources of the skills `active` is served.
pub(super) fn resources(generation: &Generation, active: &ActiveSet) -> Vec<Resource> {
    generation.skills().resources(
        |plugin| generation.serves_skills_of(active, plugin),
        &|server| generation.live_skills(server),
    )
}

/// The bridged server a read of the skill file `uri` is relayed to and the server's own URI
/// of it, if `active` is served its skill.
pub(super) fn relayed(
    generation: &Generation,
    active: &ActiveSet,
    uri: &str,
) -> Option<(String, String)> {
    generation.skills().relayed(
        uri,
        |server| generation.serves_skills_of(active, server),
        &|server| generation.live_skills(server),
    )
}

/// How the contents of a read relayed to `server` are named: each of the server's own URIs
/// as served.
pub(super) fn served_as(server: &str) -> impl Fn(String) -> String + Send + '_ {
    move |own| served_uri(server, &own).unwrap_or(own)
}

/// The contents of the skill file `uri`, if `active` is served its skill.
pub(super) fn read(
    generation: &Generation,
    active: &ActiveSet,
    uri: &str,
) -> Option<ReadResourceResult> {
    generation
        .skills()
        .read(uri, |plugin| generation.serves_skills_of(active, plugin))
}

/// Declares the extension, and resources (skill files are read as resources), when `active`
/// is served a skill.
pub(super) fn declare(
    generation: &Generation,
    active: &ActiveSet,
    capabilities: &mut ServerCapabilities,
) {
    if !visible(generation, active).is_empty() {
        declare_skills(capabilities);
    }
}

/// Declares the extension when any plugin or bridged server has a skill: the whole server's
/// description.
pub(super) fn declare_any(generation: &Generation, capabilities: &mut ServerCapabilities) {
    let live = |p: &crate::discovery::DiscoveredPlugin| {
        generation
            .live_skills(&p.manifest.name)
            .is_some_and(|s| !s.is_empty())
    };
    if !generation.skills().is_empty() || generation.registry().plugins().iter().any(live) {
        declare_skills(capabilities);
    }
}

/// Declares the extension, and resources.
fn declare_skills(capabilities: &mut ServerCapabilities) {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(SKILLS_EXTENSION_ID.to_owned(), JsonObject::new());
    capabilities
        .resources
        .get_or_insert_with(super::resources::resources_capability);
}
