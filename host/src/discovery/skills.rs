//! Skills plugins ship (the MCP Skills extension, `io.modelcontextprotocol/skills`, SEP-2640):
//! beside the libraries, a folder `skills/<plugin>/<skill>/` holding a `SKILL.md` (YAML
//! frontmatter with `name` and `description`, then instructions) and any files it refers to.
//!
//! They are read at discovery, never by opening a library: rmcp's [`SkillCatalog`] loads each
//! plugin folder's `skills/` tree (every file's bytes, their `sha256` digests, the
//! frontmatter), and serves each skill at `skill://<plugin>/<skill>/SKILL.md`, its files under
//! the same prefix. A skill belongs to the plugin its first segment names, and is served to a
//! request whose active set has one of that plugin's toolsets, as its tools are.
//!
//! A bridged server's skills are those it listed, under `skill://<server>/...`
//! ([`super::servers::skills`]): its cached listing's until it lists again (`live`), each got
//! and its files read from it (relayed).

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
};

use rmcp::{
    handler::server::skill_catalog::SkillCatalog,
    model::{ReadResourceResult, Resource, Skill, SkillResources},
};

use super::{
    DiscoveredPlugin, Provider,
    servers::skills::{served_skills, skill_resource, upstream_uri},
};

/// The folder, beside the plugin libraries, that holds their skills.
pub(crate) const SKILLS_FOLDER: &str = "skills";

/// The URI scheme skills are served under.
const SCHEME: &str = "skill://";

/// The skills of every plugin folder, loaded once, and of every bridged server, as cached.
#[derive(Debug, Default)]
pub(crate) struct PluginSkills {
    catalogs: Vec<SkillCatalog>,
    /// Each bridged server's skills as its cached listing has them (as served), by name.
    bridged: BTreeMap<String, Vec<Skill>>,
}

/// The skills a bridged server listed since its cached listing was read (as served), by its
/// name; `None` while it has not.
pub(crate) type Live<'a> = &'a dyn Fn(&str) -> Option<Vec<Skill>>;

/// No bridged server has listed since.
pub(crate) fn cached_only(_server: &str) -> Option<Vec<Skill>> {
    None
}

impl PluginSkills {
    /// Loads the `skills/` folder beside the libraries of `plugins`, for each folder that has
    /// one (a folder that cannot be read is skipped with a warning naming it), and the cached
    /// skills of the bridged servers among them.
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
        let bridged = plugins
            .iter()
            .filter_map(|p| match &p.provider {
                Provider::Bridged { server, cache } => {
                    let cached = cache.read(server).map(|c| c.listing.skills);
                    let skills = served_skills(server, &cached.unwrap_or_default());
                    Some((server.name.clone(), skills))
                }
                Provider::Library | Provider::Isolated { .. } => None,
            })
            .collect();
        Self { catalogs, bridged }
    }

    /// Whether no plugin folder has a skill, nor any bridged server's cached listing.
    pub(crate) fn is_empty(&self) -> bool {
        self.catalogs.iter().all(|c| c.skills().is_empty())
            && self.bridged.values().all(Vec::is_empty)
    }

    /// Every skill whose plugin or server `serves` says yes to, ordered by URI.
    pub(crate) fn skills(&self, serves: impl Fn(&str) -> bool, live: Live<'_>) -> Vec<Skill> {
        let mut skills: Vec<Skill> = (self.catalogs.iter())
            .flat_map(SkillCatalog::skills)
            .filter(|s| plugin_of(&s.uri).is_some_and(&serves))
            .chain(self.bridged_skills(&serves, live).map(|(_, skill)| skill))
            .collect();
        skills.sort_by(|a, b| a.uri.cmp(&b.uri));
        skills
    }

    /// The skills of the bridged servers `serves` says yes to, each with its server's name:
    /// those it listed since, else its cached ones.
    fn bridged_skills<'a>(
        &'a self,
        serves: &'a impl Fn(&str) -> bool,
        live: Live<'a>,
    ) -> impl Iterator<Item = (&'a str, Skill)> + 'a {
        (self.bridged.iter())
            .filter(|(server, _)| serves(server))
            .flat_map(move |(server, cached)| {
                let skills = live(server).unwrap_or_else(|| cached.clone());
                skills
                    .into_iter()
                    .map(move |skill| (server.as_str(), skill))
            })
    }

    /// The `SKILL.md` resources of the skills whose plugin or server `serves` says yes to.
    pub(crate) fn resources(&self, serves: impl Fn(&str) -> bool, live: Live<'_>) -> Vec<Resource> {
        (self.catalogs.iter())
            .flat_map(SkillCatalog::resources)
            .filter(|r| plugin_of(&r.uri).is_some_and(&serves))
            .chain(
                self.bridged_skills(&serves, live)
                    .map(|(_, skill)| skill_resource(&skill)),
            )
            .collect()
    }

    /// The bridged server a read of `uri` is relayed to, and the server's own URI: when
    /// `serves` says yes to it and `uri` is a file of one of its skills (for a skill whose
    /// files are dynamic, any URI in its folder).
    pub(crate) fn relayed(
        &self,
        uri: &str,
        serves: impl Fn(&str) -> bool,
        live: Live<'_>,
    ) -> Option<(String, String)> {
        let (server, _) = self
            .bridged_skills(&serves, live)
            .find(|(_, skill)| is_file_of(skill, uri))?;
        Some((server.to_owned(), upstream_uri(server, uri)?))
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

/// Whether `uri` is a file of `skill`: one its manifest lists, or, when its files are dynamic,
/// one in its folder.
fn is_file_of(skill: &Skill, uri: &str) -> bool {
    match &skill.resources {
        SkillResources::Files(files) => files.iter().any(|f| f.uri == uri),
        _ => skill
            .uri
            .strip_suffix(rmcp::model::SKILL_MD)
            .is_some_and(|folder| uri.starts_with(folder) && !uri.contains("/../")),
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
    fn a_bridged_servers_skill_files_are_relayed_under_its_own_uris_live_first() {
        use rmcp::model::{SkillFrontmatter, SkillResource};
        let skill = |uri: &str, resources| {
            Skill::new(uri, SkillFrontmatter::new("commit", "Commit"), resources)
        };
        let listed = skill(
            "skill://tiny/commit/SKILL.md",
            SkillResources::Files(vec![SkillResource::from_bytes(
                "skill://tiny/commit/SKILL.md",
                b"a",
            )]),
        );
        let skills = PluginSkills {
            catalogs: Vec::new(),
            bridged: BTreeMap::from([("tiny".to_owned(), vec![listed])]),
        };
        let uri = "skill://tiny/commit/SKILL.md";
        assert_eq!(
            skills.relayed(uri, |_| true, &cached_only),
            Some(("tiny".to_owned(), "skill://commit/SKILL.md".to_owned()))
        );
        assert_eq!(skills.relayed(uri, |_| false, &cached_only), None);
        let other = "skill://tiny/commit/notes.md";
        assert_eq!(skills.relayed(other, |_| true, &cached_only), None);
        let dynamic = |_: &str| Some(vec![skill(uri, SkillResources::Dynamic)]);
        assert!(skills.relayed(other, |_| true, &dynamic).is_some());
        let outside = "skill://tiny/commit/../../x/SKILL.md";
        assert_eq!(skills.relayed(outside, |_| true, &dynamic), None);
        assert_eq!(skills.skills(|_| true, &|_| Some(Vec::new())), []);
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
        let listed = skills.skills(|plugin| plugin == "sandboxes", &cached_only);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].uri, "skill://sandboxes/run-code/SKILL.md");
        assert_eq!(listed[0].frontmatter.description, "Run code in a sandbox");
        let rmcp::model::SkillResources::Files(files) = &listed[0].resources else {
            panic!("a manifest of files");
        };
        assert_eq!(files[0].digest, rmcp::model::sha256_digest(text.as_bytes()));
        assert!(
            skills
                .skills(|plugin| plugin == "other", &cached_only)
                .is_empty()
        );
        assert!(skills.read(&listed[0].uri, |_| false).is_none());
        assert!(skills.read(&listed[0].uri, |_| true).is_some());
    }
}
