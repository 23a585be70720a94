//! The URIs a bridged server's skills (SEP-2640) are served under: its own `skill://PATH`
//! becomes `skill://SERVER/PATH`, for the skill's `SKILL.md` and each of its files, so two
//! servers' skills never collide and each URI names the server it is relayed to, as a
//! plugin's skills name their plugin. A skill with a URI or file outside `skill://` is not
//! served (with a warning naming it): it could not be named so.

use rmcp::model::{Resource, Skill, SkillResources};

use super::config::ServerEntry;

/// The URI scheme skills are served under.
const SCHEME: &str = "skill://";

/// The MIME type of a `SKILL.md`.
const MARKDOWN: &str = "text/markdown";

/// `uri` of `server`, as served.
pub(crate) fn served_uri(server: &str, uri: &str) -> Option<String> {
    let path = uri.strip_prefix(SCHEME)?;
    Some(format!("{SCHEME}{server}/{path}"))
}

/// The server's own URI of `uri`, served for `server`; `None` when `uri` is not one.
pub(crate) fn upstream_uri(server: &str, uri: &str) -> Option<String> {
    let path = uri.strip_prefix(SCHEME)?.strip_prefix(server)?;
    let path = path.strip_prefix('/').filter(|p| !p.is_empty())?;
    Some(format!("{SCHEME}{path}"))
}

/// The skills `server` listed, as served; those that cannot be named so are left out.
pub(crate) fn served_skills(server: &ServerEntry, skills: &[Skill]) -> Vec<Skill> {
    skills
        .iter()
        .filter_map(|skill| {
            let served = served_skill(&server.name, skill);
            if served.is_none() {
                tracing::warn!(
                    "{}: skill {} is not served: its URI or a file's is not under {SCHEME}",
                    server.label(),
                    crate::util::names::Shown(&skill.uri)
                );
            }
            served
        })
        .collect()
}

/// `skill` of `server`, its URIs as served.
fn served_skill(server: &str, skill: &Skill) -> Option<Skill> {
    let mut served = skill.clone();
    served.uri = served_uri(server, &skill.uri)?;
    if let SkillResources::Files(files) = &mut served.resources {
        for file in files {
            file.uri = served_uri(server, &file.uri)?;
        }
    }
    Some(served)
}

/// The `SKILL.md` resource of a served `skill`.
pub(crate) fn skill_resource(skill: &Skill) -> Resource {
    let mut resource = Resource::new(skill.uri.clone(), skill.frontmatter.name.clone());
    resource.description = Some(skill.frontmatter.description.clone());
    resource.mime_type = Some(MARKDOWN.to_owned());
    resource
}

#[cfg(test)]
mod tests {
    use rmcp::model::{SkillFrontmatter, SkillResource};

    use super::*;
    use crate::discovery::servers::cache::tests::server;

    #[test]
    fn a_skill_is_served_under_its_servers_name_and_mapped_back() {
        let skill = Skill::new(
            "skill://git/commit/SKILL.md",
            SkillFrontmatter::new("commit", "Commit well"),
            SkillResources::Files(vec![
                SkillResource::from_bytes("skill://git/commit/SKILL.md", b"a"),
                SkillResource::from_bytes("skill://git/commit/notes.md", b"b"),
            ]),
        );
        let served = served_skills(&server("tiny", "http://h/mcp"), &[skill]);
        assert_eq!(served[0].uri, "skill://tiny/git/commit/SKILL.md");
        let SkillResources::Files(files) = &served[0].resources else {
            panic!("files");
        };
        assert_eq!(files[1].uri, "skill://tiny/git/commit/notes.md");
        assert_eq!(
            upstream_uri("tiny", &files[1].uri).as_deref(),
            Some("skill://git/commit/notes.md")
        );
        assert_eq!(upstream_uri("tin", &files[1].uri), None);
        assert_eq!(upstream_uri("tiny", "skill://tiny/"), None);
        assert_eq!(upstream_uri("tiny", "file:///tiny/x"), None);
    }

    #[test]
    fn a_skill_outside_the_scheme_is_not_served() {
        let skill = Skill::new(
            "https://example.com/commit/SKILL.md",
            SkillFrontmatter::new("commit", "Commit well"),
            SkillResources::Dynamic,
        );
        assert!(served_skills(&server("tiny", "http://h/mcp"), &[skill]).is_empty());
    }
}
