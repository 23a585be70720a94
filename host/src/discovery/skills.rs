//! Skills plugins ship (the MCP Skills extension, `io.modelcontextprotocol/skills`, SEP-2640):
//! beside the libraries, a folder `skills/<plugin>/<skill>/` holding a `SKILL.md` (YAML
//! frontmatter with `name` and `description`, then instructions) and any files it refers to.
//!
//! They are read at discovery, never by opening a library: rmcp's [`SkillCatalog`] loads each
//! plugin folder's `skills/` tree (every file's bytes, their `sha256` digests, the
//! frontmatter), and serves each skill at `skill://<plugin>/<skill>/SKILL.md`, its files under
//! the same prefix. A skill belongs to the plugin its first segment names, and is served to a
//! request whose active set has one of that plugin's toolsets, as its tools are.

use std::{collections::BTreeSet, path::PathBuf};

use rmcp::{
    handler::server::skill_catalog::SkillCatalog,
    model::{ReadResourceResult, Resource, Skill},
};

use super::{DiscoveredPlugin, Provider};

/// The folder, beside the plugin libraries, that holds their skills.
pub(crate) const SKILLS_FOLDER: &str = "skills";

/// The URI scheme skills are served under.
const SCHEME: &str = "skill://";

/// The skills of every plugin folder, loaded once.
#[derive(Debug, Default)]
pub(crate) struct PluginSkills {
    catalogs: Vec<SkillCatalog>,
}

impl PluginSkills {
    /// Loads the `skills/` folder beside the libraries of `plugins`, for each folder that has
    /// one; a folder that cannot be read is skipped with a warning naming it.
    pub(crate) fn discover(plugins: &[DiscoveredPlugin]) -> Self {
        let folders: BTreeSet<PathBuf> = plugins
            .iter()
            .filter(|p| !matches!(p.provider, Provider::Bridged { .. }))
            .filter_map(|p| p.path.parent())
            .map(|dir| dir.join(SKILLS_FOLDER))
            .filter(|dir| dir.is_dir())
            .collect();
        let catalogs = folders
            .into_iter()
            .filter_map(|dir| match SkillCatalog::from_dir(&dir) {
                Ok(catalog) => Some(catalog),
                Err(error) => {
                    tracing::warn!("skills in {} are not served: {error}", dir.display());
                    None
                }
            })
            .collect();
        Self { catalogs }
    }

    /// Whether no plugin folder has a skill.
    pub(crate) fn is_empty(&self) -> bool {
        self.catalogs.iter().all(|c| c.skills().is_empty())
    }

    /// Every skill whose plugin `serves` says yes to, ordered by URI.
    pub(crate) fn skills(&self, serves: impl Fn(&str) -> bool) -> Vec<Skill> {
        let mut skills: Vec<Skill> = (self.catalogs.iter())
            .flat_map(SkillCatalog::skills)
            .filter(|s| plugin_of(&s.uri).is_some_and(&serves))
            .collect();
        skills.sort_by(|a, b| a.uri.cmp(&b.uri));
        skills
    }

    /// The `SKILL.md` resources of the skills whose plugin `serves` says yes to.
    pub(crate) fn resources(&self, serves: impl Fn(&str) -> bool) -> Vec<Resource> {
        (self.catalogs.iter())
            .flat_map(SkillCatalog::resources)
            .filter(|r| plugin_of(&r.uri).is_some_and(&serves))
            .collect()
    }

    /// The contents of the skill file `uri`, if its plugin `serves` says yes to and a skill
    /// has it.
    pub(crate) fn read(
        &self,
        uri: &str,
        serves: impl Fn(&str) -> bool,
    ) -> Option<ReadResourceResult> {
        if !plugin_of(uri).is_some_and(serves) {
            return None;
        }
        self.catalogs.iter().find_map(|c| c.read_resource(uri))
    }
}

/// The plugin a skill URI belongs to: its first path segment.
pub(crate) fn plugin_of(uri: &str) -> Option<&str> {
    uri.strip_prefix(SCHEME)?
        .split('/')
        .next()
        .filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_belongs_to_the_plugin_its_first_segment_names() {
        assert_eq!(
            plugin_of("skill://sandboxes/run-code/SKILL.md"),
            Some("sandboxes")
        );
        assert_eq!(plugin_of("file:///x"), None);
        assert_eq!(plugin_of("skill:///SKILL.md"), None);
    }

    #[test]
    fn skills_are_read_with_their_digests_and_scoped_by_plugin() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("skills/sandboxes/run-code");
        std::fs::create_dir_all(&skill).unwrap();
        let text =
            "---\nname: run-code\ndescription: Run code in a sandbox\n---\nLaunch one first.\n";
        std::fs::write(skill.join("SKILL.md"), text).unwrap();
        let manifest = plugin_manifest::Manifest::from_json(
            r#"{"abi": "0.1.0", "name": "sandboxes", "version": "1"}"#,
        )
        .unwrap();
        let plugin = DiscoveredPlugin::library(dir.path().join("libsandboxes.so"), manifest);
        let skills = PluginSkills::discover(&[plugin]);
        let listed = skills.skills(|plugin| plugin == "sandboxes");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].uri, "skill://sandboxes/run-code/SKILL.md");
        assert_eq!(listed[0].frontmatter.description, "Run code in a sandbox");
        let rmcp::model::SkillResources::Files(files) = &listed[0].resources else {
            panic!("a manifest of files");
        };
        assert_eq!(files[0].digest, rmcp::model::sha256_digest(text.as_bytes()));
        assert!(skills.skills(|plugin| plugin == "other").is_empty());
        assert!(skills.read(&listed[0].uri, |_| false).is_none());
        assert!(skills.read(&listed[0].uri, |_| true).is_some());
    }
}
