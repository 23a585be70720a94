//! Criterion benchmark of the two shapes a host service can take across the ABI (the choice
//! `plugin-abi`'s crate docs explain): a typed method appended to `HostContext`, called
//! through the `sabi_trait` object as a plugin calls it, against one generic call keyed by
//! name, with JSON in and out, emulated with `HostContext::request` (a name, JSON params, a
//! future of a JSON answer: the shape such a call would have). Both answer the same value, the
//! request's session id; the generic one also pays for reading its JSON answer, as a plugin
//! would. The group is `host_services`.

use std::time::Duration;

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, ROption, RResult, RStr, RString, RVec},
};
use async_ffi::{FfiFuture, FutureExt};
use criterion::{Criterion, criterion_group, criterion_main};
use plugin_abi::{ErrorKind, FfiError, HostContext, HostContextBox};

/// A host whose one service answers the session id, both ways.
#[derive(Clone)]
struct Host {
    session: RString,
}

impl HostContext for Host {
    fn log(&self, _level: u8, _logger: ROption<RString>, _data_json: RString) {}

    fn progress(&self, _progress: f64, _total: ROption<f64>, _message: ROption<RString>) {}

    fn request(
        &self,
        method: RStr<'_>,
        params_json: RString,
    ) -> FfiFuture<RResult<RString, FfiError>> {
        let answer = match method.as_str() {
            "session" => match serde_json::from_str::<serde_json::Value>(&params_json) {
                Ok(_) => RResult::ROk(RString::from(
                    serde_json::json!({"session": self.session.as_str()}).to_string(),
                )),
                Err(e) => RResult::RErr(FfiError::new(ErrorKind::Tool, e.to_string())),
            },
            other => RResult::RErr(FfiError::new(
                ErrorKind::NotFound,
                format!("this host does not offer `{other}`"),
            )),
        };
        async move { answer }.into_ffi()
    }

    fn active_toolsets(&self) -> RVec<RString> {
        RVec::new()
    }

    fn client_capabilities(&self) -> RString {
        RString::from("{}")
    }

    fn session(&self) -> ROption<RString> {
        ROption::RSome(self.session.clone())
    }
}

fn host_services(c: &mut Criterion) {
    let host = HostContextBox::from_ptr(
        RArc::new(Host {
            session: RString::from("3f1c2a5e-9b7d-4e8f-a0b1-c2d3e4f5a6b7"),
        }),
        TD_Opaque,
    );
    let mut group = c.benchmark_group("host_services");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("typed_method", |b| {
        b.iter(|| host.session().into_option().map(RString::into_string))
    });
    group.bench_function("name_keyed_json", |b| {
        b.iter(|| {
            let answer = futures::executor::block_on(host.request("session".into(), "{}".into()));
            let answer: serde_json::Value = serde_json::from_str(&answer.unwrap()).unwrap();
            answer["session"].as_str().map(str::to_owned)
        })
    });
    group.finish();
}

criterion_group!(benches, host_services);
criterion_main!(benches);
