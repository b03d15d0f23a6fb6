//! Bad router configs: the message names the file, the line and the field,
//! the exit code is 2, and nothing panics. Static errors fail before EAL;
//! errors only DPDK can find (no such device, MAC not settable) after it.

mod common;
use common::*;
use std::time::Duration;

fn run_config(test: &str, vdevs: &[String], toml: &str) -> (Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("router.toml");
    std::fs::write(&path, toml).unwrap();
    let mut cmd = fastpath();
    cmd.args(eal_args(test, vdevs))
        .args(["--", "--config"])
        .arg(&path)
        .args(["--duration", "0.5"]);
    (
        run(cmd, Duration::from_secs(60)),
        path.display().to_string(),
    )
}

fn assert_config_error(r: &Run, at: &str, needles: &[&str]) {
    assert_eq!(r.status.code(), Some(2), "stderr:\n{}", r.stderr);
    assert!(r.stderr.contains(at), "stderr lacks {at:?}:\n{}", r.stderr);
    for n in needles {
        assert!(r.stderr.contains(n), "stderr lacks {n:?}:\n{}", r.stderr);
    }
    assert!(!r.stderr.contains("panicked"), "panic:\n{}", r.stderr);
}

const TWO_PORTS: &str = "[[port]]\ndevice = \"net_null0\"\naddress = \"10.0.1.1/24\"\n\n\
                         [[port]]\ndevice = \"net_null1\"\naddress = \"10.0.2.1/24\"\n";

fn nulls() -> Vec<String> {
    vec!["net_null0".into(), "net_null1".into()]
}

#[test]
fn device_dpdk_does_not_have() {
    let toml = TWO_PORTS.replace("net_null1", "net_null7");
    let (r, path) = run_config("cfgdev", &nulls(), &toml);
    assert_config_error(
        &r,
        &format!("{path}:5:"),
        &[
            "field `device`",
            "\"net_null7\"",
            "DPDK has 2 ports: 0 (net_null0), 1 (net_null1)",
        ],
    );
}

#[test]
fn next_hop_outside_every_subnet() {
    let toml = format!("{TWO_PORTS}\n[[route]]\nprefix = \"0.0.0.0/0\"\nvia = \"10.9.9.9\"\n");
    let (r, path) = run_config("cfgvia", &nulls(), &toml);
    assert_config_error(
        &r,
        &format!("{path}:11:"),
        &["field `via`", "10.9.9.9", "not in any connected subnet"],
    );
    // Before EAL: no EAL output at all.
    assert!(!r.stderr.contains("EAL: Detected"), "{}", r.stderr);
}

#[test]
fn overlapping_port_addresses() {
    let toml = TWO_PORTS.replace("10.0.2.1/24", "10.0.1.9/16");
    let (r, path) = run_config("cfgovl", &nulls(), &toml);
    assert_config_error(
        &r,
        &format!("{path}:7:"),
        &["overlapping", "line 1", "line 5"],
    );
}

#[test]
fn syntax_and_type_errors_point_at_the_line() {
    let toml = TWO_PORTS.replace("address = \"10.0.2.1/24\"", "address = 10.0.2.1");
    let (r, path) = run_config("cfgsyn", &nulls(), &toml);
    assert_config_error(&r, &format!("{path}:7:"), &["address"]);
    let toml = TWO_PORTS.replace("address = \"10.0.1.1/24\"", "adress = \"10.0.1.1/24\"");
    let (r, path) = run_config("cfgunk", &nulls(), &toml);
    assert_config_error(&r, &format!("{path}:3:"), &["adress"]);
}

#[test]
fn mac_the_driver_cannot_set() {
    // net_pcap cannot change its MAC address.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pcap");
    write_pcap(&empty, &[]);
    let vdevs = vec![
        format!(
            "net_pcap0,rx_pcap={},tx_pcap={}",
            empty.display(),
            dir.path().join("out.pcap").display()
        ),
        "net_null1".into(),
    ];
    let toml = TWO_PORTS.replace("net_null0", "net_pcap0").replace(
        "address = \"10.0.1.1/24\"",
        "address = \"10.0.1.1/24\"\nmac = \"02:00:00:00:00:01\"",
    );
    let (r, path) = run_config("cfgmac", &vdevs, &toml);
    assert_config_error(
        &r,
        &format!("{path}:1:"),
        &[
            "field `mac`",
            "cannot set 02:00:00:00:00:01",
            "remove `mac`",
            "02:70:63:61:70:00",
        ],
    );
}

#[test]
fn missing_file() {
    let mut cmd = fastpath();
    cmd.args(eal_args("cfgnone", &nulls()))
        .args(["--", "--config", "/nonexistent/router.toml"]);
    let r = run(cmd, Duration::from_secs(60));
    assert_config_error(&r, "/nonexistent/router.toml", &["No such file"]);
}

#[test]
fn one_dpdk_port_under_two_names() {
    // "net_null0" is DPDK port 0: configuring port 0 again by id is refused.
    let toml = TWO_PORTS.replace("device = \"net_null1\"", "device = 0");
    let (r, path) = run_config("cfgdup", &nulls(), &toml);
    assert_config_error(
        &r,
        &format!("{path}:5:"),
        &[
            "is DPDK port 0",
            "already configured as \"net_null0\" (line 1)",
        ],
    );
}

#[test]
fn a_pci_port_dpdk_did_not_probe_says_what_is_wrong_with_the_device() {
    // No host has a device at ff:1f.7 (bus 0xff, device 0x1f, function 7).
    let toml = TWO_PORTS.replace("device = \"net_null1\"", "device = \"0000:ff:1f.7\"");
    let (r, path) = run_config("cfgpci", &nulls(), &toml);
    assert_config_error(
        &r,
        &format!("{path}:5:"),
        &[
            "DPDK has no port \"0000:ff:1f.7\"",
            "no PCI device 0000:ff:1f.7 on this host",
        ],
    );
}

/// `TWO_PORTS` plus `hooks`; returns the text and the 1-based line of the
/// first line containing `needle`.
fn with_hooks(hooks: &str, needle: &str) -> (String, usize) {
    let text = format!("{TWO_PORTS}\n{hooks}");
    let line = text
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in the config"))
        + 1;
    (text, line)
}

const FILTER: &str = "[[hook]]\npoint = \"egress\"\nport = \"net_null1\"\nkind = \"filter\"\n\
                      name = \"fw\"\npolicy = \"drop\"\n\
                      [[hook.rule]]\nproto = \"tcp\"\ndport = 23\naction = \"drop\"\n\
                      [[hook.rule]]\nproto = \"tcp\"\ndport = \"x\"\naction = \"drop\"\n";

#[test]
fn hook_rule_error_points_at_the_rule_and_field() {
    let (toml, line) = with_hooks(FILTER, "dport = \"x\"");
    let (r, path) = run_config("cfghookrule", &nulls(), &toml);
    assert_config_error(
        &r,
        &format!("{path}:{line}:"),
        &[
            "[[hook]] \"fw\" (filter at egress of net_null1)",
            "rule 2 field `dport`",
        ],
    );
}

#[test]
fn hook_errors_name_kind_point_port_and_policy() {
    let cases: [(&str, &str, &str, &[&str]); 4] = [
        (
            "cfghookkind",
            "[[hook]]\npoint = \"egress\"\nport = \"net_null1\"\nkind = \"firewall\"\npolicy = \"drop\"\n",
            "kind = \"firewall\"",
            &["no hook kind \"firewall\" is registered", "accept, classify, filter"],
        ),
        (
            "cfghookpoint",
            "[[hook]]\npoint = \"egress\"\nport = \"net_null1\"\nkind = \"classify\"\n",
            "point = \"egress\"",
            &["a \"classify\" hook cannot sit at egress; it works at ingress"],
        ),
        (
            "cfghookport",
            "[[hook]]\npoint = \"ingress\"\nport = \"net_null5\"\nkind = \"accept\"\n",
            "port = \"net_null5\"",
            &["field `port`", "net_null5 is not a [[port]]"],
        ),
        (
            "cfghookpolicy",
            "[[hook]]\npoint = \"egress\"\nport = \"net_null0\"\nkind = \"filter\"\n",
            "[[hook]]",
            &["field `policy`", "explicit default policy"],
        ),
    ];
    for (tag, hooks, at, needles) in cases {
        let (toml, line) = with_hooks(hooks, at);
        let (r, path) = run_config(tag, &nulls(), &toml);
        assert_config_error(&r, &format!("{path}:{line}:"), needles);
    }
}

#[test]
fn hook_point_typo_fails_before_eal() {
    let (toml, line) = with_hooks(
        "[[hook]]\npoint = \"egres\"\nport = \"net_null1\"\nkind = \"filter\"\n",
        "[[hook]]",
    );
    let (r, path) = run_config("cfghooktypo", &nulls(), &toml);
    assert_config_error(
        &r,
        &format!("{path}:{line}:"),
        &["field `point`", "unknown point \"egres\"", "\"ingress\""],
    );
    assert!(
        !r.stderr.contains("EAL"),
        "failed before EAL:\n{}",
        r.stderr
    );
}
