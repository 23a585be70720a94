//! Property tests of what the host reads from a library it has not opened: the link section's
//! framing ([`section::decode`]) and the manifest's JSON ([`Manifest::from_json`]) never panic,
//! whatever the bytes, and a manifest survives being written and read back.

use proptest::{collection::vec, option, prelude::*};
use serde_json::{Map, Value};

use crate::{
    Activation, Annotations, CompletionDecl, CompletionRef, ExtensionDecl, Manifest,
    PermissionKind, Permissions, PromptArgumentDecl, PromptDecl, ResourceDecl,
    ResourceTemplateDecl, TaskSupport, ToolDecl, ToolsetDecl, section,
};

/// A name as plugins write them, sometimes empty.
fn name() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,8}|"
}

/// Free text: any characters, JSON escapes included.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), any::<String>()]
}

/// A small JSON value without floats (which JSON text may not carry bit for bit).
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::from),
            object(inner).prop_map(Value::Object),
        ]
    })
}

fn object(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Map<String, Value>> {
    vec((any::<String>(), values), 0..4).prop_map(|pairs| pairs.into_iter().collect())
}

fn annotations() -> impl Strategy<Value = Annotations> {
    (
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
    )
        .prop_map(
            |(read_only, destructive, idempotent, open_world)| Annotations {
                read_only,
                destructive,
                idempotent,
                open_world,
            },
        )
}

fn toolset() -> impl Strategy<Value = ToolsetDecl> {
    (name(), text(), text(), text(), any::<bool>(), any::<bool>()).prop_map(
        |(name, title, description, instructions, default, always)| ToolsetDecl {
            name,
            title,
            description,
            instructions,
            default,
            always,
        },
    )
}

fn tool() -> impl Strategy<Value = ToolDecl> {
    (
        name(),
        option::of(text()),
        text(),
        name(),
        annotations(),
        option::of(object(json())),
        option::of(object(json())),
        (
            prop_oneof![
                Just(TaskSupport::Forbidden),
                Just(TaskSupport::Optional),
                Just(TaskSupport::Required)
            ],
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                name,
                title,
                description,
                toolset,
                annotations,
                meta,
                input_schema,
                (task, first),
            )| {
                ToolDecl {
                    name,
                    title,
                    description,
                    toolset,
                    annotations,
                    meta,
                    input_schema,
                    output_schema: None,
                    task,
                    input_first: first && !task.is_forbidden(),
                }
            },
        )
}

fn extension() -> impl Strategy<Value = ExtensionDecl> {
    (
        name(),
        any::<i32>(),
        any::<bool>(),
        option::of(text()),
        option::of(text()),
        option::of(annotations()),
        option::of(object(json())),
        option::of(object(json())),
    )
        .prop_map(
            |(tool, order, wrap, title, description, annotations, meta, input_schema)| {
                ExtensionDecl {
                    tool,
                    order,
                    wrap,
                    title,
                    description,
                    annotations,
                    meta,
                    input_schema,
                }
            },
        )
}

fn resource() -> impl Strategy<Value = ResourceDecl> {
    (
        text(),
        name(),
        option::of(text()),
        text(),
        option::of(text()),
        name(),
        option::of(any::<u64>()),
    )
        .prop_map(
            |(uri, name, title, description, mime_type, toolset, size)| ResourceDecl {
                uri,
                name,
                title,
                description,
                mime_type,
                toolset,
                size,
            },
        )
}

/// A template with a resource's fields (its URI as the template).
fn template() -> impl Strategy<Value = ResourceTemplateDecl> {
    resource().prop_map(|r| ResourceTemplateDecl {
        uri_template: r.uri,
        name: r.name,
        title: r.title,
        description: r.description,
        mime_type: r.mime_type,
        toolset: r.toolset,
    })
}

fn prompt() -> impl Strategy<Value = PromptDecl> {
    let argument = (name(), text(), any::<bool>()).prop_map(|(name, description, required)| {
        PromptArgumentDecl {
            name,
            description,
            required,
        }
    });
    (
        name(),
        option::of(text()),
        text(),
        name(),
        vec(argument, 0..3),
    )
        .prop_map(
            |(name, title, description, toolset, arguments)| PromptDecl {
                name,
                title,
                description,
                toolset,
                arguments,
            },
        )
}

fn completion() -> impl Strategy<Value = CompletionDecl> {
    let reference = prop_oneof![
        name().prop_map(|name| CompletionRef::Prompt { name }),
        text().prop_map(|uri| CompletionRef::Resource { uri }),
    ];
    (reference, name()).prop_map(|(reference, argument)| CompletionDecl {
        reference,
        argument,
    })
}

/// Permissions of any text: the manifest carries them as they are written.
fn permissions() -> impl Strategy<Value = Permissions> {
    vec(vec(text(), 0..2), PermissionKind::ALL.len()).prop_map(|lists| {
        let mut permissions = Permissions::default();
        for (kind, entries) in PermissionKind::ALL.into_iter().zip(lists) {
            *permissions.entries_mut(kind) = entries;
        }
        permissions
    })
}

fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        Just(Activation::OnStartup),
        name().prop_map(Activation::OnToolset),
    ]
}

/// Any manifest the types can hold.
fn manifest() -> impl Strategy<Value = Manifest> {
    (
        (
            "[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}",
            name(),
            text(),
            text(),
        ),
        (
            vec(toolset(), 0..3),
            vec(activation(), 0..3),
            vec(tool(), 0..3),
            any::<bool>(),
            vec(extension(), 0..2),
        ),
        (
            vec(resource(), 0..2),
            vec(template(), 0..2),
            vec(prompt(), 0..2),
            vec(completion(), 0..2),
            permissions(),
        ),
    )
        .prop_map(
            |(
                (abi, name, version, description),
                (toolsets, activation, tools, dynamic_tools, extends),
                (resources, resource_templates, prompts, completions, permissions),
            )| Manifest {
                abi,
                name,
                version,
                description,
                toolsets,
                activation,
                tools,
                dynamic_tools,
                extends,
                resources,
                resource_templates,
                prompts,
                completions,
                permissions,
            },
        )
}

/// Section bytes worth trying: anything, anything after the magic (so the length and the
/// JSON are what is arbitrary), and a valid record cut or padded anywhere.
fn section_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..64),
        vec(any::<u8>(), 0..64).prop_map(|rest| [&section::MAGIC[..], &rest].concat()),
        (any::<String>(), any::<prop::sample::Index>(), 0..8usize).prop_map(
            |(json, cut, zeros)| {
                let mut record = section::encode(&json);
                record.truncate(cut.index(record.len() + 1));
                record.extend(std::iter::repeat_n(0, zeros));
                record
            }
        ),
    ]
}

proptest! {
    #[test]
    fn decoding_any_section_bytes_never_panics(bytes in section_bytes()) {
        let _ = section::decode(&bytes);
    }

    #[test]
    fn parsing_any_text_as_a_manifest_never_panics(bytes in vec(any::<u8>(), 0..256)) {
        let _ = Manifest::from_json(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn parsing_a_damaged_manifest_never_panics(
        manifest in manifest(),
        cut in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let json = serde_json::to_string(&manifest).unwrap();
        let mut bytes = json.into_bytes();
        let at = cut.index(bytes.len());
        bytes[at] = byte;
        let _ = Manifest::from_json(&String::from_utf8_lossy(&bytes));
        let _ = Manifest::from_json(&String::from_utf8_lossy(&bytes[..at]));
    }

    #[test]
    fn a_manifest_round_trips_through_its_json_and_its_section(
        manifest in manifest(),
        leading in 0..8usize,
        trailing in 0..8usize,
    ) {
        let json = serde_json::to_string(&manifest).unwrap();
        prop_assert_eq!(&Manifest::from_json(&json).unwrap(), &manifest);
        let mut bytes = vec![0; leading];
        bytes.extend(section::encode(&json));
        bytes.extend(std::iter::repeat_n(0, trailing));
        prop_assert_eq!(section::decode(&bytes), Ok(json.as_str()));
    }
}
