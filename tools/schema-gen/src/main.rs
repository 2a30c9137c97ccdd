//! Writes one schema.json and its meta.json (method tables) for the protocol version and feature
//! set this binary was built with: `v2` (protocol version 2, the newest draft), `alpha5` (v2 as
//! draft alpha.5: built from alpha5/Cargo.toml on that draft's crate release) and `unstable` (every unstable feature). `make schemas` builds it six times;
//! the argument is the output folder (python/acp_fast/schema). The settings are the ones the
//! protocol's own schema files are published with (JSON Schema 2020-12, titled untagged variants,
//! `$ref` without siblings). The unstable runs also write `v1/state.json` and `v2/state.json`: the
//! session update kinds of the version with the state rules the schema publishes for each as
//! `x-state` annotations (`state_rules`; v1 publishes none).

use agent_client_protocol_schema as acp;

/// The crate release generated from (Cargo.toml pins it; recorded in the rule table).
const CRATE: &str = if cfg!(feature = "alpha5") { "1.14.0" } else { "1.20.0" };

#[cfg(not(feature = "v2"))]
use acp::v1::{
    AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest, ClientResponse,
    JsonRpcMessage, Notification, ProtocolLevelNotification, Request, Response, AGENT_METHOD_NAMES,
    CLIENT_METHOD_NAMES, PROTOCOL_LEVEL_METHOD_NAMES,
};
#[cfg(feature = "v2")]
use acp::v2::{
    AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest, ClientResponse,
    JsonRpcMessage, Notification, ProtocolLevelNotification, Request, Response, AGENT_METHOD_NAMES,
    CLIENT_METHOD_NAMES, PROTOCOL_LEVEL_METHOD_NAMES,
};
use schemars::generate::SchemaSettings;
use schemars::transform::{RemoveRefSiblings, ReplaceBoolSchemas};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What an agent sends.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
#[allow(clippy::large_enum_variant, dead_code)]
enum AgentOutgoingMessage {
    Request(Request<AgentRequest>),
    Response(Response<AgentResponse>),
    Notification(Notification<AgentNotification>),
}

/// What a client sends.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
#[allow(clippy::large_enum_variant, dead_code)]
enum ClientOutgoingMessage {
    Request(Request<ClientRequest>),
    Response(Response<ClientResponse>),
    Notification(Notification<ClientNotification>),
}

/// The root: one message either side may send (a v1 batch is an array of these; v2 has no batches).
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(title = "Agent Client Protocol")]
#[allow(clippy::large_enum_variant, dead_code)]
enum AcpTypes {
    Agent(JsonRpcMessage<AgentOutgoingMessage>),
    Client(JsonRpcMessage<ClientOutgoingMessage>),
    ProtocolLevel(JsonRpcMessage<Notification<ProtocolLevelNotification>>),
}

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).expect("usage: acp-fast-schema-gen OUTPUT_DIR"));
    let mut settings = SchemaSettings::draft2020_12();
    settings.untagged_enum_variant_titles = true;
    let mut bools = ReplaceBoolSchemas::default();
    bools.skip_additional_properties = true;
    let generator = settings
        .with_transform(RemoveRefSiblings::default())
        .with_transform(bools)
        .into_generator();
    let schema = serde_json::to_value(generator.into_root_schema_for::<AcpTypes>()).unwrap();
    let version = if cfg!(feature = "v2") { 2 } else { 1 };
    let meta = serde_json::json!({
        "version": version,
        "agentMethods": AGENT_METHOD_NAMES,
        "clientMethods": CLIENT_METHOD_NAMES,
        "protocolMethods": PROTOCOL_LEVEL_METHOD_NAMES,
    });
    let suffix = if cfg!(feature = "unstable") { ".unstable" } else { "" };
    let folder = if cfg!(feature = "alpha5") { "v2-alpha.5".to_string() } else { format!("v{version}") };
    let dir = out.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, value) in [("schema", &schema), ("meta", &meta)] {
        let path = dir.join(format!("{name}{suffix}.json"));
        let mut text = serde_json::to_string_pretty(value).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        println!("wrote {}", path.display());
    }
    if cfg!(all(feature = "unstable", not(feature = "alpha5"))) {
        let path = dir.join("state.json");
        let mut text = serde_json::to_string_pretty(&state_rules(&schema)).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        println!("wrote {}", path.display());
    }
}

/// The `x-state` annotations of a schema as one table: `updates` (each `sessionUpdate` kind's
/// rules, in schema order), `requests`, `responses` and `notifications` (by method, from the
/// definitions that carry `x-method`). A rule is `{action, target, id?, field?, value?}` as the
/// schema writes it, under its scope (`session` or `agent`).
fn state_rules(schema: &serde_json::Value) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let defs = schema["$defs"].as_object().expect("$defs");
    let mut updates = Map::new();
    let update = &defs["SessionUpdate"];
    let variants = update.get("anyOf").or_else(|| update.get("oneOf")).and_then(Value::as_array);
    for variant in variants.expect("SessionUpdate.anyOf / oneOf") {
        let Some(kind) = variant.pointer("/properties/sessionUpdate/const").and_then(Value::as_str) else {
            continue; // the open `other` branch
        };
        updates.insert(kind.to_string(), variant.get("x-state").cloned().unwrap_or_else(|| json!({})));
    }
    let mut by_role: [(&str, Map<String, Value>); 3] =
        [("Request", Map::new()), ("Response", Map::new()), ("Notification", Map::new())];
    for (name, def) in defs {
        let (Some(rules), Some(method)) = (def.get("x-state"), def.get("x-method").and_then(Value::as_str)) else {
            continue;
        };
        for (suffix, table) in by_role.iter_mut() {
            if name.ends_with(*suffix) {
                table.insert(method.to_string(), rules.clone());
            }
        }
    }
    let [(_, requests), (_, responses), (_, notifications)] = by_role;
    json!({
        "source": format!("agent-client-protocol-schema {CRATE} (x-state of schema.unstable.json)"),
        "updates": updates,
        "requests": requests,
        "responses": responses,
        "notifications": notifications,
    })
}
