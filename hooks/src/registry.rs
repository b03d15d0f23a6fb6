//! The registry of hook kinds, by name. A hook written outside the pipeline
//! (a crate, an example file) becomes usable by registering its kind and
//! naming it in the config; the pipeline only ever sees `Arc<dyn Hook>` and,
//! on each worker, the `Box<dyn HookWorker>` it made.

use crate::lock;
use crate::{Hook, HookPoint};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

/// What the config says about one hook instance, for its kind to build from:
/// the `[[hook]]` table's own keys (minus the pipeline's: `point`, `port`,
/// `kind`, `name`, `priority`) and its `[[hook.rule]]` tables in order.
#[derive(Clone, Debug, Default)]
pub struct HookArgs {
    pub params: toml::Table,
    pub rules: Vec<toml::Table>,
}

/// What a kind may need to know to build an instance.
#[derive(Clone, Debug)]
pub struct BuildContext {
    /// Workers that will call the hook (`HookContext::worker` is below this).
    pub workers: usize,
    /// Where the instance sits.
    pub point: HookPoint,
    pub port: u16,
    /// Every port by config name (vdev name, PCI address or id as written)
    /// and port id, for rules that name ports.
    pub ports: Vec<(String, u16)>,
    /// Instance name (unique per point and port).
    pub name: String,
}

impl BuildContext {
    /// Port id of a port named in a rule: by its config name or its id.
    pub fn port_id(&self, name: &str) -> Option<u16> {
        self.ports
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, id)| id)
            .or_else(|| {
                let id: u16 = name.parse().ok()?;
                self.ports.iter().any(|&(_, p)| p == id).then_some(id)
            })
    }
}

/// Why a kind refused its arguments: which rule (index into
/// `HookArgs::rules`), which field, and what is expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookBuildError {
    pub rule: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl HookBuildError {
    /// An error about the hook's own parameter `field`.
    pub fn param(field: &str, message: impl Into<String>) -> Self {
        HookBuildError {
            rule: None,
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// An error about `field` of rule `rule`.
    pub fn rule(rule: usize, field: &str, message: impl Into<String>) -> Self {
        HookBuildError {
            rule: Some(rule),
            field: Some(field.into()),
            message: message.into(),
        }
    }
}

impl fmt::Display for HookBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.rule, &self.field) {
            (Some(r), Some(field)) => write!(f, "rule {} field `{field}`: {}", r + 1, self.message),
            (Some(r), None) => write!(f, "rule {}: {}", r + 1, self.message),
            (None, Some(field)) => write!(f, "field `{field}`: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for HookBuildError {}

/// A kind of hook: builds instances from config arguments. A kind may keep
/// state across instances (e.g. a connection table that survives a rule
/// reload, handed to every instance it builds).
pub trait HookKind: Send + Sync {
    /// The name the config uses (`kind = "..."`).
    fn name(&self) -> &str;
    /// The points an instance may sit at.
    fn points(&self) -> &[HookPoint] {
        &HookPoint::ALL
    }
    /// Build one instance, or say what is wrong with the arguments.
    fn build(&self, args: &HookArgs, cx: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError>;
}

type Kinds = Mutex<BTreeMap<String, (u64, Arc<dyn HookKind>)>>;

/// Hook kinds by name.
#[derive(Default)]
pub struct Registry {
    kinds: Arc<Kinds>,
    next_id: Mutex<u64>,
}

/// Proof of one registration. [`KindHandle::unregister`] removes the kind;
/// it cannot fail. Dropping the handle keeps the kind registered.
#[must_use = "keep the handle to unregister the kind later"]
pub struct KindHandle {
    kinds: Weak<Kinds>,
    name: String,
    id: u64,
}

/// A kind of that name is registered already.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateKind(pub String);

impl fmt::Display for DuplicateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a hook kind named `{}` is registered already", self.0)
    }
}

impl std::error::Error for DuplicateKind {}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Register `kind` under its name.
    pub fn register(&self, kind: Arc<dyn HookKind>) -> Result<KindHandle, DuplicateKind> {
        let name = kind.name().to_string();
        let id = {
            let mut n = lock(&self.next_id);
            *n += 1;
            *n
        };
        let mut kinds = lock(&self.kinds);
        if kinds.contains_key(&name) {
            return Err(DuplicateKind(name));
        }
        kinds.insert(name.clone(), (id, kind));
        Ok(KindHandle {
            kinds: Arc::downgrade(&self.kinds),
            name,
            id,
        })
    }

    /// The kind registered under `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn HookKind>> {
        lock(&self.kinds).get(name).map(|(_, k)| k.clone())
    }

    /// Registered names, sorted (for error messages).
    pub fn names(&self) -> Vec<String> {
        lock(&self.kinds).keys().cloned().collect()
    }
}

impl KindHandle {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Remove the kind. Instances already built keep running until their
    /// chain is replaced; new configs can no longer name it. Unregistering
    /// a kind whose registry is gone, or twice, is a no-op.
    pub fn unregister(self) {
        if let Some(kinds) = self.kinds.upgrade() {
            let mut kinds = lock(&kinds);
            if kinds.get(&self.name).is_some_and(|(id, _)| *id == self.id) {
                kinds.remove(&self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HookBurst, HookContext, HookWorker, WorkerStore};

    struct Nop;
    impl Hook for Nop {
        fn worker(&self, _: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
            Box::new(Nop)
        }
    }
    impl HookWorker for Nop {
        fn process(&mut self, _: &HookContext, _: &mut WorkerStore, _: &mut HookBurst<'_, '_>) {}
    }
    struct NopKind(&'static str);
    impl HookKind for NopKind {
        fn name(&self) -> &str {
            self.0
        }
        fn build(&self, _: &HookArgs, _: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError> {
            Ok(Arc::new(Nop))
        }
    }

    #[test]
    fn register_lookup_unregister() {
        let r = Registry::new();
        let h = r.register(Arc::new(NopKind("nop"))).unwrap();
        assert_eq!(
            r.register(Arc::new(NopKind("nop"))).err(),
            Some(DuplicateKind("nop".into()))
        );
        assert!(r.get("nop").is_some());
        assert_eq!(r.names(), vec!["nop".to_string()]);
        h.unregister();
        assert!(r.get("nop").is_none());
        // A new registration under the same name is not removed by a stale handle.
        let h2 = r.register(Arc::new(NopKind("nop"))).unwrap();
        drop(h2);
        assert!(r.get("nop").is_some(), "dropping a handle keeps the kind");
    }

    #[test]
    fn unregister_after_the_registry_is_gone_is_a_no_op() {
        let kind = Arc::new(NopKind("x"));
        let r = Registry::new();
        let h = r.register(kind.clone()).unwrap();
        assert_eq!(Arc::strong_count(&kind), 2, "the registry holds the kind");
        drop(r);
        // The handle does not keep the registry, or its kinds, alive.
        assert_eq!(
            Arc::strong_count(&kind),
            1,
            "the kind outlived its registry"
        );
        assert_eq!(h.name(), "x");
        h.unregister();
        assert_eq!(Arc::strong_count(&kind), 1);
    }

    #[test]
    fn port_names_resolve_by_name_or_id() {
        let cx = BuildContext {
            workers: 1,
            point: HookPoint::Egress,
            port: 0,
            ports: vec![("net_tap0".into(), 0), ("0000:01:00.0".into(), 3)],
            name: "f".into(),
        };
        assert_eq!(cx.port_id("net_tap0"), Some(0));
        assert_eq!(cx.port_id("3"), Some(3));
        assert_eq!(cx.port_id("4"), None);
        assert_eq!(cx.port_id("eth9"), None);
    }
}
