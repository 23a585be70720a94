//! A generated catalogue for the "Many tools" figures (BENCHMARKS.md): 200 plugins of 10 tools
//! each, as manifests (the host builds its search index and its `tools/list` from manifests
//! alone, so no library is built), and 50 queries whose right tool is known.
//!
//! Each plugin is one vendor's service of one domain (20 vendors x 10 domains): the toolset
//! `{vendor}_{domain}`, tools named `{vendor}_{domain}__{verb}_{noun}` as a bridged server's
//! are, with descriptions of ordinary length (two or three sentences) and input schemas of
//! two to four described arguments. The queries are written by hand, in words a user would
//! type, not copied from the descriptions.

use plugin_manifest::Manifest;
use reactor_mcp_server::internals::{
    discovery::DiscoveredPlugin,
    registry::Registry,
    reports::{ToolIndex, search_everything},
};
use serde_json::{Value, json};

/// The vendors: each domain has one service per vendor.
pub const VENDORS: [&str; 20] = [
    "acme",
    "globex",
    "initech",
    "umbrella",
    "hooli",
    "stark",
    "wayne",
    "wonka",
    "cyberdyne",
    "tyrell",
    "soylent",
    "vandelay",
    "dunder",
    "pied",
    "aperture",
    "oscorp",
    "massive",
    "gringotts",
    "monarch",
    "nakatomi",
];

/// One kind of thing a domain holds: its name, what it is, its fields, and the two things its
/// tools do with it.
struct Noun {
    name: &'static str,
    gloss: &'static str,
    fields: &'static [(&'static str, &'static str)],
    verbs: [&'static str; 2],
}

/// One domain: its key, its title, and its five nouns.
struct Domain {
    key: &'static str,
    title: &'static str,
    nouns: [Noun; 5],
}

const fn noun(
    name: &'static str,
    gloss: &'static str,
    fields: &'static [(&'static str, &'static str)],
    verbs: [&'static str; 2],
) -> Noun {
    Noun {
        name,
        gloss,
        fields,
        verbs,
    }
}

const DOMAINS: [Domain; 10] = [
    Domain {
        key: "tracker",
        title: "issue tracker",
        nouns: [
            noun(
                "issue",
                "a bug report or a task someone on the team should work on",
                &[
                    ("title", "A short summary"),
                    ("body", "The details, in Markdown"),
                    ("assignee", "Who should work on it"),
                ],
                ["create", "search"],
            ),
            noun(
                "comment",
                "a remark left on an issue by a team member",
                &[
                    ("issue_id", "The issue commented on"),
                    ("text", "What to say"),
                ],
                ["create", "list"],
            ),
            noun(
                "milestone",
                "a target date grouping the issues due by then",
                &[("name", "Its name"), ("due_on", "The date it is due")],
                ["create", "list"],
            ),
            noun(
                "label",
                "a coloured tag that sorts issues into categories",
                &[("name", "Its name"), ("color", "A hex colour")],
                ["create", "delete"],
            ),
            noun(
                "sprint",
                "a fixed period of work planned by an agile team",
                &[
                    ("name", "Its name"),
                    ("starts_on", "First day"),
                    ("ends_on", "Last day"),
                ],
                ["get", "update"],
            ),
        ],
    },
    Domain {
        key: "chat",
        title: "team chat",
        nouns: [
            noun(
                "message",
                "a text posted to a channel or sent directly to a person",
                &[("channel", "Where to post it"), ("text", "What to say")],
                ["create", "search"],
            ),
            noun(
                "channel",
                "a room where a group of people talk about one subject",
                &[
                    ("name", "Its name"),
                    ("private", "Whether only invited people see it"),
                ],
                ["create", "list"],
            ),
            noun(
                "reaction",
                "an emoji someone added under a message",
                &[("message_id", "The message"), ("emoji", "The emoji's name")],
                ["create", "delete"],
            ),
            noun(
                "user",
                "a person with an account in the workspace",
                &[("email", "Their email address")],
                ["get", "list"],
            ),
            noun(
                "reminder",
                "a note the chat bot will repeat to someone at a set time",
                &[
                    ("text", "What to remind of"),
                    ("at", "When, as a date and time"),
                ],
                ["create", "list"],
            ),
        ],
    },
    Domain {
        key: "calendar",
        title: "calendar",
        nouns: [
            noun(
                "event",
                "a meeting or appointment with a start, an end and attendees",
                &[
                    ("summary", "Its title"),
                    ("start", "When it starts"),
                    ("end", "When it ends"),
                    ("attendees", "Email addresses invited"),
                ],
                ["create", "list"],
            ),
            noun(
                "availability",
                "the free and busy times of people over a period",
                &[
                    ("people", "Email addresses"),
                    ("from", "Start of the period"),
                    ("to", "End of the period"),
                ],
                ["get", "search"],
            ),
            noun(
                "room",
                "a meeting room that can be booked with its capacity",
                &[("capacity", "How many people it must seat")],
                ["list", "get"],
            ),
            noun(
                "invitation",
                "a request to attend an event, accepted or declined",
                &[
                    ("event_id", "The event"),
                    ("response", "accepted, declined or tentative"),
                ],
                ["update", "list"],
            ),
            noun(
                "calendar",
                "a named set of events shared with people",
                &[("name", "Its name"), ("time_zone", "Its time zone")],
                ["create", "delete"],
            ),
        ],
    },
    Domain {
        key: "mail",
        title: "email",
        nouns: [
            noun(
                "email",
                "a message sent to one or more mailboxes",
                &[
                    ("to", "Recipients' addresses"),
                    ("subject", "The subject line"),
                    ("body", "The text"),
                ],
                ["create", "search"],
            ),
            noun(
                "draft",
                "an email written but not sent yet",
                &[
                    ("to", "Recipients' addresses"),
                    ("subject", "The subject line"),
                    ("body", "The text"),
                ],
                ["create", "list"],
            ),
            noun(
                "folder",
                "a mailbox folder that holds emails",
                &[("name", "Its name")],
                ["create", "list"],
            ),
            noun(
                "attachment",
                "a file sent along with an email",
                &[
                    ("email_id", "The email"),
                    ("attachment_id", "The attachment"),
                ],
                ["get", "list"],
            ),
            noun(
                "filter",
                "a rule that sorts incoming emails automatically",
                &[
                    ("from", "Sender to match"),
                    ("folder", "Where matching emails go"),
                ],
                ["create", "delete"],
            ),
        ],
    },
    Domain {
        key: "files",
        title: "file storage",
        nouns: [
            noun(
                "file",
                "a document, image or other file kept in the drive",
                &[("path", "Where it is"), ("content", "Its bytes, base64")],
                ["create", "search"],
            ),
            noun(
                "folder",
                "a directory holding files and other folders",
                &[("path", "Where it is")],
                ["create", "list"],
            ),
            noun(
                "share",
                "a link or permission giving someone access to a file",
                &[
                    ("path", "The file"),
                    ("email", "Who gets access"),
                    ("role", "viewer or editor"),
                ],
                ["create", "delete"],
            ),
            noun(
                "version",
                "an earlier revision of a file that can be restored",
                &[("path", "The file"), ("version_id", "The revision")],
                ["list", "get"],
            ),
            noun(
                "quota",
                "how much storage is used and how much is left",
                &[("user", "Whose storage")],
                ["get", "update"],
            ),
        ],
    },
    Domain {
        key: "crm",
        title: "customer relationship manager",
        nouns: [
            noun(
                "contact",
                "a person the sales team talks to, with phone and email",
                &[
                    ("name", "Full name"),
                    ("email", "Email address"),
                    ("phone", "Phone number"),
                ],
                ["create", "search"],
            ),
            noun(
                "deal",
                "a sales opportunity with an amount and a stage in the pipeline",
                &[
                    ("name", "Its name"),
                    ("amount", "Value in dollars"),
                    ("stage", "Pipeline stage"),
                ],
                ["create", "update"],
            ),
            noun(
                "company",
                "an organisation that is a customer or a prospect",
                &[("name", "Its name"), ("domain", "Its web domain")],
                ["get", "list"],
            ),
            noun(
                "note",
                "a written record of a call or meeting with a customer",
                &[("contact_id", "The contact"), ("text", "What happened")],
                ["create", "list"],
            ),
            noun(
                "lead",
                "a possible customer not qualified yet",
                &[("email", "Their email"), ("source", "Where they came from")],
                ["create", "delete"],
            ),
        ],
    },
    Domain {
        key: "billing",
        title: "billing system",
        nouns: [
            noun(
                "invoice",
                "a bill sent to a customer listing what they owe",
                &[
                    ("customer_id", "Who pays"),
                    ("items", "Lines with amounts"),
                    ("due_on", "Payment due date"),
                ],
                ["create", "search"],
            ),
            noun(
                "payment",
                "money received from a customer by card or transfer",
                &[("invoice_id", "The invoice paid"), ("amount", "How much")],
                ["create", "list"],
            ),
            noun(
                "refund",
                "money given back to a customer for a payment",
                &[
                    ("payment_id", "The payment"),
                    ("amount", "How much"),
                    ("reason", "Why"),
                ],
                ["create", "get"],
            ),
            noun(
                "subscription",
                "a plan a customer pays for every month or year",
                &[("customer_id", "Who pays"), ("plan", "The plan")],
                ["update", "delete"],
            ),
            noun(
                "coupon",
                "a discount code customers can apply at checkout",
                &[("code", "The code"), ("percent_off", "The discount")],
                ["create", "list"],
            ),
        ],
    },
    Domain {
        key: "wiki",
        title: "knowledge base",
        nouns: [
            noun(
                "page",
                "an article of the team's documentation",
                &[
                    ("title", "Its title"),
                    ("body", "Its text, in Markdown"),
                    ("space", "The space it belongs to"),
                ],
                ["create", "search"],
            ),
            noun(
                "space",
                "a section of the wiki owned by one team",
                &[("name", "Its name")],
                ["create", "list"],
            ),
            noun(
                "revision",
                "an earlier state of a page and who changed it",
                &[("page_id", "The page")],
                ["list", "get"],
            ),
            noun(
                "template",
                "a page outline new pages can start from",
                &[("name", "Its name"), ("body", "The outline")],
                ["create", "list"],
            ),
            noun(
                "permission",
                "who may read or edit a space",
                &[
                    ("space", "The space"),
                    ("group", "The group"),
                    ("level", "read or edit"),
                ],
                ["update", "get"],
            ),
        ],
    },
    Domain {
        key: "monitoring",
        title: "monitoring service",
        nouns: [
            noun(
                "alert",
                "a notification that a metric crossed its threshold",
                &[("status", "firing or resolved"), ("service", "The service")],
                ["list", "update"],
            ),
            noun(
                "metric",
                "a time series such as CPU load, latency or error rate",
                &[
                    ("name", "The metric"),
                    ("from", "Start of the range"),
                    ("to", "End of the range"),
                ],
                ["get", "search"],
            ),
            noun(
                "dashboard",
                "a set of charts showing metrics on one screen",
                &[("title", "Its title"), ("charts", "The charts")],
                ["create", "list"],
            ),
            noun(
                "incident",
                "an outage or degradation being handled by the on-call team",
                &[("title", "What is wrong"), ("severity", "How bad")],
                ["create", "update"],
            ),
            noun(
                "silence",
                "a period during which matching alerts are muted",
                &[("matcher", "Which alerts"), ("until", "When it ends")],
                ["create", "delete"],
            ),
        ],
    },
    Domain {
        key: "database",
        title: "database service",
        nouns: [
            noun(
                "query",
                "a SQL statement run against a database",
                &[("sql", "The statement"), ("database", "Which database")],
                ["create", "list"],
            ),
            noun(
                "table",
                "a table of rows and columns in a database",
                &[("database", "Which database"), ("name", "The table")],
                ["get", "list"],
            ),
            noun(
                "backup",
                "a snapshot of a database that can be restored",
                &[("database", "Which database")],
                ["create", "list"],
            ),
            noun(
                "replica",
                "a read-only copy of a database in another region",
                &[("database", "Which database"), ("region", "Where")],
                ["create", "delete"],
            ),
            noun(
                "user",
                "an account that may connect to a database",
                &[("name", "Its name"), ("role", "What it may do")],
                ["create", "update"],
            ),
        ],
    },
];

/// A tool's name: `{vendor}_{domain}__{verb}_{noun}`.
pub fn tool_name(vendor: &str, domain: &str, verb: &str, noun: &str) -> String {
    format!("{vendor}_{domain}__{verb}_{noun}")
}

/// What the tool does, in two or three sentences.
fn description(verb: &str, noun: &Noun, service: &str) -> String {
    let (n, gloss) = (noun.name, noun.gloss);
    match verb {
        "create" => format!(
            "Create a new {n} in {service}. A {n} is {gloss}. Returns the created {n} with its id and a link to it."
        ),
        "list" => format!(
            "List the {n}s in {service}, newest first, one page at a time. A {n} is {gloss}. Pass the cursor of a page to get the next one."
        ),
        "get" => format!("Get one {n} from {service} with all of its fields. A {n} is {gloss}."),
        "update" => format!(
            "Update an existing {n} in {service}: fields left out keep their values. A {n} is {gloss}. Returns the {n} as it is now."
        ),
        "delete" => format!(
            "Delete a {n} from {service} for good. A {n} is {gloss}. This cannot be undone."
        ),
        _ => format!(
            "Search {service} for {n}s matching words, best matches first. A {n} is {gloss}. Returns at most `limit` results."
        ),
    }
}

/// The tool's input schema.
fn schema(verb: &str, noun: &Noun) -> Value {
    let mut properties = serde_json::Map::new();
    let mut property = |name: &str, kind: &str, text: &str| {
        properties.insert(name.to_owned(), json!({"type": kind, "description": text}));
    };
    match verb {
        "create" => noun
            .fields
            .iter()
            .for_each(|(f, t)| property(f, "string", t)),
        "list" => {
            property("limit", "integer", "How many to answer (default 20)");
            property("cursor", "string", "Where the previous page ended");
        }
        "get" | "delete" => property("id", "string", "Its id"),
        "update" => {
            property("id", "string", "Its id");
            noun.fields
                .iter()
                .for_each(|(f, t)| property(f, "string", t));
        }
        _ => {
            property("query", "string", "Words to look for");
            property("limit", "integer", "How many to answer (default 10)");
        }
    }
    let required: Vec<&String> = properties.keys().take(1).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The manifest of `vendor`'s service of `domain`: one toolset, ten tools.
fn manifest(vendor: &str, domain: &Domain) -> Manifest {
    let toolset = format!("{vendor}_{}", domain.key);
    let service = format!("the {} {}", capitalised(vendor), domain.title);
    let tools: Vec<Value> = domain
        .nouns
        .iter()
        .flat_map(|noun| noun.verbs.iter().map(move |verb| (verb, noun)))
        .map(|(verb, noun)| {
            json!({
                "name": tool_name(vendor, domain.key, verb, noun.name),
                "toolset": toolset,
                "description": description(verb, noun, &service),
                "input_schema": schema(verb, noun),
                "annotations": {"readOnlyHint": matches!(*verb, "list" | "get" | "search")},
            })
        })
        .collect();
    let json = json!({
        "abi": "0.2.0", "name": toolset, "version": "1.0.0",
        "toolsets": [{"name": toolset, "title": capitalised(&service[4..]),
                      "description": format!("Tools of {service}"), "default": true}],
        "tools": tools,
    });
    Manifest::from_json(&json.to_string()).expect("a generated manifest is valid")
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The catalogue: 200 plugins of 10 tools, as a registry of manifests.
pub fn registry() -> Registry {
    let plugins = VENDORS
        .iter()
        .flat_map(|vendor| DOMAINS.iter().map(move |domain| (vendor, domain)))
        .map(|(vendor, domain)| {
            DiscoveredPlugin::library(
                format!("lib{vendor}_{}.so", domain.key),
                manifest(vendor, domain),
            )
        })
        .collect();
    Registry::new(plugins)
}

/// 50 queries, each with the tool that answers it: written as a user asks, naming the service.
pub const QUERIES: [(&str, &str); 50] = [
    (
        "file a bug in the acme issue tracker about the login page",
        "acme_tracker__create_issue",
    ),
    (
        "find globex tickets mentioning checkout errors",
        "globex_tracker__search_issue",
    ),
    (
        "leave a remark on an initech issue",
        "initech_tracker__create_comment",
    ),
    (
        "what milestones does umbrella's tracker have",
        "umbrella_tracker__list_milestone",
    ),
    (
        "remove a tag from the hooli tracker",
        "hooli_tracker__delete_label",
    ),
    (
        "change the dates of the current stark sprint",
        "stark_tracker__update_sprint",
    ),
    (
        "post a message to the wayne team chat channel",
        "wayne_chat__create_message",
    ),
    (
        "which channels exist in wonka chat",
        "wonka_chat__list_channel",
    ),
    (
        "add an emoji reaction to a cyberdyne chat message",
        "cyberdyne_chat__create_reaction",
    ),
    (
        "look up a tyrell chat user by email",
        "tyrell_chat__get_user",
    ),
    (
        "remind me tomorrow at 9 in soylent chat to send the report",
        "soylent_chat__create_reminder",
    ),
    (
        "schedule a meeting with Ana next Tuesday on the vandelay calendar",
        "vandelay_calendar__create_event",
    ),
    (
        "when are Bob and Carol both free this week, dunder calendar",
        "dunder_calendar__get_availability",
    ),
    (
        "book a meeting room for 8 people at pied",
        "pied_calendar__list_room",
    ),
    (
        "accept the invitation to the aperture planning event",
        "aperture_calendar__update_invitation",
    ),
    (
        "create a shared calendar for the oscorp team",
        "oscorp_calendar__create_calendar",
    ),
    (
        "send an email to the massive finance team with the subject budget",
        "massive_mail__create_email",
    ),
    (
        "search gringotts mail for messages from the bank",
        "gringotts_mail__search_email",
    ),
    (
        "save a draft email in monarch mail",
        "monarch_mail__create_draft",
    ),
    (
        "download the attachment of a nakatomi email",
        "nakatomi_mail__get_attachment",
    ),
    (
        "automatically sort emails from the newsletter into a folder in acme mail",
        "acme_mail__create_filter",
    ),
    (
        "upload a document to globex file storage",
        "globex_files__create_file",
    ),
    (
        "find the spreadsheet named roadmap in initech storage",
        "initech_files__search_file",
    ),
    (
        "give Dana edit access to a file in umbrella storage",
        "umbrella_files__create_share",
    ),
    (
        "restore an older revision of a hooli file",
        "hooli_files__list_version",
    ),
    (
        "how much disk space is left in stark storage",
        "stark_files__get_quota",
    ),
    (
        "add a new customer contact with phone number to the wayne crm",
        "wayne_crm__create_contact",
    ),
    (
        "move the wonka sales opportunity to the negotiation stage",
        "wonka_crm__update_deal",
    ),
    (
        "which companies are prospects in the cyberdyne crm",
        "cyberdyne_crm__list_company",
    ),
    (
        "write down what was said on the call with a tyrell customer",
        "tyrell_crm__create_note",
    ),
    (
        "drop a lead that is not interested from the soylent crm",
        "soylent_crm__delete_lead",
    ),
    (
        "bill a customer for March in vandelay billing",
        "vandelay_billing__create_invoice",
    ),
    (
        "record a card payment received for a dunder invoice",
        "dunder_billing__create_payment",
    ),
    (
        "give money back to a pied customer for a payment",
        "pied_billing__create_refund",
    ),
    (
        "cancel a customer's monthly plan in aperture billing",
        "aperture_billing__delete_subscription",
    ),
    (
        "make a 20 percent discount code in oscorp billing",
        "oscorp_billing__create_coupon",
    ),
    (
        "write a documentation article in the massive knowledge base",
        "massive_wiki__create_page",
    ),
    (
        "find the onboarding docs in the gringotts knowledge base",
        "gringotts_wiki__search_page",
    ),
    (
        "who changed this monarch wiki page and when",
        "monarch_wiki__list_revision",
    ),
    (
        "let the design group edit the nakatomi wiki space",
        "nakatomi_wiki__update_permission",
    ),
    (
        "which alerts are firing in acme monitoring",
        "acme_monitoring__list_alert",
    ),
    (
        "show the latency metric of the api for the last hour in globex monitoring",
        "globex_monitoring__get_metric",
    ),
    (
        "build a dashboard of charts in initech monitoring",
        "initech_monitoring__create_dashboard",
    ),
    (
        "declare an outage incident in umbrella monitoring",
        "umbrella_monitoring__create_incident",
    ),
    (
        "mute alerts during maintenance in hooli monitoring",
        "hooli_monitoring__create_silence",
    ),
    (
        "run a SQL statement on the stark database",
        "stark_database__create_query",
    ),
    (
        "what columns does the orders table have in the wayne database",
        "wayne_database__get_table",
    ),
    (
        "take a snapshot backup of the wonka database",
        "wonka_database__create_backup",
    ),
    (
        "add a read-only copy of the cyberdyne database in europe",
        "cyberdyne_database__create_replica",
    ),
    (
        "create an account that can connect to the tyrell database",
        "tyrell_database__create_user",
    ),
];

/// How a search over the catalogue does on [`QUERIES`]: for each query, the rank (1-based) of
/// its right tool among the first `depth` answers, `None` when it is not among them.
pub fn ranks(registry: &Registry, index: &ToolIndex, depth: usize) -> Vec<Option<usize>> {
    QUERIES
        .iter()
        .map(|(query, answer)| {
            let found = search_everything(index, registry, query, depth);
            found["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .position(|t| t["name"] == *answer)
                .map(|at| at + 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reactor_mcp_server::internals::serve::tools_list;

    #[test]
    fn the_catalogue_has_200_plugins_of_10_tools_and_every_answer_is_one_of_them() {
        let registry = registry();
        let listed = tools_list(&registry, false);
        assert_eq!(listed.tools.len(), 2000 + 1, "and list_server_toolsets");
        for (query, answer) in QUERIES {
            assert!(
                listed.tools.iter().any(|t| t.name == answer),
                "{query}: no tool {answer}"
            );
        }
    }

    #[test]
    fn the_right_tool_is_in_the_top_5_for_at_least_45_of_the_50_queries() {
        let registry = registry();
        let index = ToolIndex::new(&registry);
        let ranks = ranks(&registry, &index, 5);
        let missed: Vec<&str> = QUERIES
            .iter()
            .zip(&ranks)
            .filter(|(_, rank)| rank.is_none())
            .map(|((query, _), _)| *query)
            .collect();
        assert!(missed.len() <= 5, "missed {}: {missed:#?}", missed.len());
    }
}
