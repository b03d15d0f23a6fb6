//! Kernel interfaces (`[kernel] interfaces = true`): the TAP device that
//! makes them (`/dev/net/tun`), and no interface already holding one of
//! their names. Says nothing for a config without them.

use crate::doctor::finding::Finding;
use crate::doctor::host::Host;
use crate::doctor::inputs::Inputs;

const T: &str = "kernel";

pub fn check(host: &Host, inputs: &Inputs) -> Vec<Finding> {
    let Some(cfg) = inputs.config.as_ref().filter(|c| c.kernel.interfaces) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if host.exists("/dev/net/tun") {
        out.push(Finding::ok(
            T,
            "/dev/net/tun is there for the ports' kernel interfaces",
        ));
    } else {
        out.push(Finding::fail(
            T,
            "no /dev/net/tun: the ports' kernel interfaces ([kernel] interfaces = true) cannot be made",
            "load the tun module (modprobe tun); in a container, run it with \
             --device /dev/net/tun --cap-add NET_ADMIN",
        ));
    }
    for name in cfg
        .ports
        .iter()
        .filter_map(|p| p.kernel_interface.as_deref())
    {
        if host.exists(&format!("/sys/class/net/{name}")) {
            out.push(Finding::fail(
                T,
                format!("an interface named {name} exists: the kernel interface of that name cannot be made"),
                format!(
                    "remove it (ip link del {name}; a fastpath still running keeps it) or give the \
                     port another `kernel_interface`"
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::checks::tree::{put, tempdir};
    use crate::doctor::eal_args;
    use crate::doctor::finding::Severity;

    use std::path::Path;

    fn findings(root: &Path, config: &str) -> Vec<Finding> {
        let cfg = root.join("router.toml");
        std::fs::write(&cfg, config).unwrap();
        let inputs = Inputs::new(eal_args::parse(&[]), Some(&cfg));
        check(&Host::new(root), &inputs)
    }

    const KERNEL: &str = "[[port]]\ndevice = \"net_null0\"\naddress = \"10.0.1.1/24\"\n\
                          [kernel]\ninterfaces = true\n";

    #[test]
    fn the_tap_device_and_free_names_are_checked() {
        let root = tempdir("kernel");
        let f = findings(root.path(), KERNEL);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Fail, "{f:?}");
        assert!(
            f[0].fix
                .as_deref()
                .is_some_and(|x| x.contains("modprobe tun")),
            "{f:?}"
        );
        put(root.path(), "/dev/net/tun", "");
        put(root.path(), "/sys/class/net/fp0/ifindex", "7\n");
        let f = findings(root.path(), KERNEL);
        assert_eq!(
            f.iter().map(|f| f.severity).collect::<Vec<_>>(),
            [Severity::Ok, Severity::Fail]
        );
        assert!(f[1].what.contains("fp0"), "{f:?}");
        // No kernel interfaces: nothing to say.
        assert!(findings(root.path(), &KERNEL.replace("true", "false")).is_empty());
    }
}
