//! Ethernet ports: configuration, queues, start/stop, link and statistics.

use super::{DpdkError, MbufBurst, Mempool, BURST_SIZE};
use dpdk_sys as sys;
use std::ffi::CStr;

/// How to set a port up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortConfig {
    /// RX queues; RSS spreads flows over them when more than one.
    pub rx_queues: u16,
    /// TX queues (one per worker lcore that sends on the port).
    pub tx_queues: u16,
    /// RX descriptors per queue (adjusted to what the device accepts).
    pub rx_desc: u16,
    /// TX descriptors per queue (adjusted to what the device accepts).
    pub tx_desc: u16,
    /// Receive every frame, not only those to our MAC.
    pub promiscuous: bool,
    /// Hash with the symmetric RSS key ([`SYMMETRIC_RSS_KEY`]) instead of the
    /// driver's default, so both directions of a flow land on the same queue
    /// number (and thus the same worker's connection table).
    pub symmetric_rss: bool,
}

/// The Toeplitz key of "Scalable TCP Session Monitoring with Symmetric
/// Receive-side Scaling" (Woo, Park, 2012): 0x6d5a repeated. With it the
/// hash of (src, dst) equals that of (dst, src), for addresses and ports.
/// 52 bytes, the longest any driver asks for; a device takes the first
/// `hash_key_size` bytes (40 for most).
pub const SYMMETRIC_RSS_KEY: [u8; 52] = {
    let mut k = [0u8; 52];
    let mut i = 0;
    while i < 52 {
        k[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    k
};

/// The key an RSS port hashes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RssKey {
    /// The driver's default (not symmetric in general).
    Driver,
    /// [`SYMMETRIC_RSS_KEY`], read back from the device after start.
    Symmetric,
    /// The symmetric key was asked for, but the device reports another.
    SymmetricRefused,
}

/// How a port's RX queues share the incoming flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxSpread {
    /// One RX queue: nothing to spread.
    Single,
    /// The device hashes flows to queues (RSS) with this key.
    Rss { key: RssKey },
    /// net_af_packet: one socket per queue in a PACKET_FANOUT_HASH group;
    /// the kernel picks the socket by its symmetric flow hash (and rolls a
    /// packet over to another socket when the chosen one is full).
    KernelFanout,
    /// net_tap: the kernel's tun driver picks the queue (the one the flow
    /// was last sent on, else a symmetric flow hash); no key of ours applies.
    KernelTun,
    /// Several queues but no hashing by the device: whoever feeds it (a
    /// memif peer, a ring's producer) decides which queue gets what.
    None,
}

impl RxSpread {
    /// How the port's start line says it (empty for one queue).
    pub fn describe(self) -> &'static str {
        match self {
            RxSpread::Single => "",
            RxSpread::Rss {
                key: RssKey::Symmetric,
            } => " (RSS, symmetric key)",
            RxSpread::Rss {
                key: RssKey::Driver,
            } => " (RSS)",
            RxSpread::Rss {
                key: RssKey::SymmetricRefused,
            } => {
                " (RSS, but the device kept its own key, not the symmetric one: \
                 replies may reach another worker's connection table)"
            }
            RxSpread::KernelFanout => " (spread by the kernel's PACKET_FANOUT hash, symmetric)",
            RxSpread::KernelTun => " (spread by the kernel's tun queue selection)",
            RxSpread::None => " (no RSS on this device)",
        }
    }
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            rx_queues: 1,
            tx_queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            promiscuous: true,
            symmetric_rss: false,
        }
    }
}

/// Counters of a port as its driver keeps them (`rte_eth_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    /// Dropped by the NIC because the RX ring was full (the host was too slow).
    pub rx_missed: u64,
    /// Erroneous frames received.
    pub rx_errors: u64,
    /// Failed transmissions.
    pub tx_errors: u64,
    /// RX mbuf allocation failures (the pool ran dry).
    pub rx_nombuf: u64,
}

/// Link state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LinkStatus {
    pub up: bool,
    pub speed_mbps: u32,
    pub full_duplex: bool,
}

/// What a port offers, read once when it is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    pub driver: String,
    pub max_rx_queues: u16,
    pub max_tx_queues: u16,
    pub configured_rx_queues: u16,
    pub configured_tx_queues: u16,
    pub rss_offloads: u64,
    pub tx_offload_capa: u64,
    pub rx_offload_capa: u64,
}

impl PortInfo {
    /// Whether the device may mark IPv4 header checksums in the mbufs it
    /// receives (its RX offloads include the IPv4 checksum).
    pub fn rx_ipv4_checksum(&self) -> bool {
        self.rx_offload_capa & u64::from(sys::RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Configured,
    Started,
    Closed,
}

/// One Ethernet port. Dropping it stops and closes it.
#[derive(Debug)]
pub struct Port {
    id: u16,
    name: String,
    state: State,
    spread: RxSpread,
    /// The RSS key handed to the driver; drivers read it again at start, so
    /// it lives as long as the port.
    rss_key: Option<Box<[u8]>>,
    /// The flow types RSS hashes (0 without RSS).
    rss_hf: u64,
    fast_free: bool,
}

/// Ownership of one RX queue: only its holder may poll it. Not `Clone`.
#[derive(Debug)]
pub struct RxQueue {
    port: u16,
    queue: u16,
}

/// Ownership of one TX queue: only its holder may send on it. Not `Clone`.
#[derive(Debug)]
pub struct TxQueue {
    port: u16,
    queue: u16,
}

/// What happened to a burst offered to a TX queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxOutcome {
    /// Handed to the driver.
    pub sent: usize,
    /// Refused by the driver and freed here.
    pub dropped: usize,
}

impl Port {
    /// Number of ports DPDK probed.
    pub fn count() -> u16 {
        // SAFETY: reads ethdev's port table; valid once EAL is up.
        unsafe { sys::rte_eth_dev_count_avail() }
    }

    /// Open port `id`; an error names the ports that do exist.
    pub fn open(id: u16) -> Result<Port, DpdkError> {
        // SAFETY: a bounds-checked lookup in ethdev's port table.
        if unsafe { sys::rte_eth_dev_is_valid_port(id) } == 0 {
            return Err(DpdkError {
                what: format!("port {id}"),
                code: libc::ENODEV,
                reason: format!("no such port; {}", describe_ports()),
            });
        }
        Ok(Port {
            id,
            name: port_name(id),
            state: State::Idle,
            spread: RxSpread::Single,
            rss_key: None,
            rss_hf: 0,
            fast_free: false,
        })
    }

    /// Whether `id` is a port DPDK has (ids need not be contiguous).
    pub fn is_valid(id: u16) -> bool {
        // SAFETY: a bounds-checked lookup in ethdev's port table.
        unsafe { sys::rte_eth_dev_is_valid_port(id) != 0 }
    }

    /// The port id of device `name` (`net_af_packet0`, `0000:01:00.0`, ...).
    pub fn find(name: &str) -> Option<u16> {
        let cname = std::ffi::CString::new(name).ok()?;
        let mut id = 0u16;
        // SAFETY: cname is a valid C string and id a valid out-parameter.
        let ret = unsafe { sys::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut id) };
        (ret == 0).then_some(id)
    }

    /// Set the port's MAC address (before or after start).
    pub fn set_mac(&mut self, mac: [u8; 6]) -> Result<(), DpdkError> {
        let mut a = sys::rte_ether_addr { addr_bytes: mac };
        // SAFETY: a is a valid address for the call; the port id is valid.
        let ret = unsafe { sys::rte_eth_dev_default_mac_addr_set(self.id, &mut a) };
        if ret != 0 {
            return Err(DpdkError::from_ret(
                format!("setting MAC address of port {} ({})", self.id, self.name),
                ret,
            ));
        }
        Ok(())
    }

    /// Program the device's multicast filter with exactly `macs`
    /// (`rte_eth_dev_set_mc_addr_list`): frames to them are received.
    pub fn set_multicast_macs(&mut self, macs: &[[u8; 6]]) -> Result<(), DpdkError> {
        let mut list: Vec<sys::rte_ether_addr> = macs
            .iter()
            .map(|m| sys::rte_ether_addr { addr_bytes: *m })
            .collect();
        let n = list.len() as u32;
        // SAFETY: list holds n initialised addresses, valid for the call (the
        // driver copies them); the port id is valid.
        let ret = unsafe { sys::rte_eth_dev_set_mc_addr_list(self.id, list.as_mut_ptr(), n) };
        if ret != 0 {
            return Err(DpdkError::from_ret(
                format!("multicast filter of port {} ({})", self.id, self.name),
                ret,
            ));
        }
        Ok(())
    }

    /// Receive every multicast frame (`rte_eth_allmulticast_enable`).
    pub fn enable_all_multicast(&mut self) -> Result<(), DpdkError> {
        // SAFETY: a plain control call on a valid port.
        let ret = unsafe { sys::rte_eth_allmulticast_enable(self.id) };
        if ret != 0 {
            return Err(DpdkError::from_ret(
                format!("all-multicast on port {} ({})", self.id, self.name),
                ret,
            ));
        }
        Ok(())
    }

    /// Set the MTU; `Ok(false)` when the driver cannot change it (virtual
    /// devices often cannot), which the caller reports as a warning.
    pub fn set_mtu(&mut self, mtu: u16) -> Result<bool, DpdkError> {
        // SAFETY: plain values; the port id is valid.
        let ret = unsafe { sys::rte_eth_dev_set_mtu(self.id, mtu) };
        match ret {
            0 => Ok(true),
            r if r == -libc::ENOTSUP => Ok(false),
            r => Err(DpdkError::from_ret(
                format!("setting MTU {mtu} on port {} ({})", self.id, self.name),
                r,
            )),
        }
    }

    /// Port id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Device name (`0000:01:00.0`, `net_pcap0`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the RX queues share the flows (known after `configure`).
    pub fn rx_spread(&self) -> RxSpread {
        self.spread
    }

    /// True when TX uses MBUF_FAST_FREE (single pool, refcount 1).
    pub fn fast_free(&self) -> bool {
        self.fast_free
    }

    /// Device capabilities and current queue counts.
    pub fn info(&self) -> Result<PortInfo, DpdkError> {
        let info = self.raw_info()?;
        Ok(PortInfo {
            driver: driver_name(&info).unwrap_or_else(|| "?".into()),
            max_rx_queues: info.max_rx_queues,
            max_tx_queues: info.max_tx_queues,
            configured_rx_queues: info.nb_rx_queues,
            configured_tx_queues: info.nb_tx_queues,
            rss_offloads: info.flow_type_rss_offloads,
            tx_offload_capa: info.tx_offload_capa,
            rx_offload_capa: info.rx_offload_capa,
        })
    }

    fn raw_info(&self) -> Result<sys::rte_eth_dev_info, DpdkError> {
        let mut info = sys::rte_eth_dev_info::default();
        // SAFETY: info is a valid out-parameter; the port id is valid.
        let ret = unsafe { sys::rte_eth_dev_info_get(self.id, &mut info) };
        if ret != 0 {
            return Err(DpdkError::from_ret(
                format!("rte_eth_dev_info_get(port {})", self.id),
                ret,
            ));
        }
        Ok(info)
    }

    /// Configure queues and descriptors, using only offloads the device reports,
    /// and hand back one ownership token per RX and TX queue.
    pub fn configure(
        &mut self,
        cfg: &PortConfig,
        pool: &Mempool,
    ) -> Result<(Vec<RxQueue>, Vec<TxQueue>), DpdkError> {
        let info = self.raw_info()?;
        self.check_queue_counts(cfg, &info)?;
        let conf = self.eth_conf(cfg, &info);
        // SAFETY: conf is a fully initialised rte_eth_conf; the port is valid
        // and not started.
        let ret =
            unsafe { sys::rte_eth_dev_configure(self.id, cfg.rx_queues, cfg.tx_queues, &conf) };
        if ret != 0 {
            return Err(DpdkError::from_ret(self.what("rte_eth_dev_configure"), ret));
        }
        let (mut rx_desc, mut tx_desc) = (cfg.rx_desc, cfg.tx_desc);
        // SAFETY: both pointers are valid u16 in/out parameters.
        let ret =
            unsafe { sys::rte_eth_dev_adjust_nb_rx_tx_desc(self.id, &mut rx_desc, &mut tx_desc) };
        if ret != 0 {
            return Err(DpdkError::from_ret(
                self.what("adjusting descriptor counts"),
                ret,
            ));
        }
        let mut rxconf = info.default_rxconf;
        rxconf.offloads = conf.rxmode.offloads;
        let rx = self.setup_rx_queues(cfg.rx_queues, rx_desc, &rxconf, pool)?;
        let mut txconf = info.default_txconf;
        txconf.offloads = conf.txmode.offloads;
        let tx = self.setup_tx_queues(cfg.tx_queues, tx_desc, &txconf)?;
        if cfg.promiscuous {
            // SAFETY: a plain control call on a valid port. Devices without the
            // feature answer -ENOTSUP, which is fine: they receive everything.
            unsafe { sys::rte_eth_promiscuous_enable(self.id) };
        }
        self.state = State::Configured;
        Ok((rx, tx))
    }

    fn what(&self, s: &str) -> String {
        format!("port {} ({}): {s}", self.id, self.name)
    }

    fn check_queue_counts(
        &self,
        cfg: &PortConfig,
        info: &sys::rte_eth_dev_info,
    ) -> Result<(), DpdkError> {
        let refuse = |reason: String| DpdkError {
            what: self.what("configure"),
            code: libc::EINVAL,
            reason,
        };
        if cfg.rx_queues == 0 || cfg.rx_queues > info.max_rx_queues {
            return Err(refuse(format!(
                "asked for {} RX queues; the device supports 1 to {}",
                cfg.rx_queues, info.max_rx_queues
            )));
        }
        if cfg.tx_queues == 0 || cfg.tx_queues > info.max_tx_queues {
            return Err(refuse(format!(
                "needs {} TX queues (one per worker lcore); the device supports 1 to {}",
                cfg.tx_queues, info.max_tx_queues
            )));
        }
        Ok(())
    }

    /// The device configuration: RSS over IP, TCP and UDP when there is more
    /// than one RX queue and the device hashes any of them (with the
    /// symmetric key when asked), and fast mbuf free where the device has it.
    fn eth_conf(&mut self, cfg: &PortConfig, info: &sys::rte_eth_dev_info) -> sys::rte_eth_conf {
        let mut conf = sys::rte_eth_conf::default();
        let rss_hf = (sys::RTE_ETH_RSS_IP as u64
            | sys::RTE_ETH_RSS_TCP as u64
            | sys::RTE_ETH_RSS_UDP as u64)
            & info.flow_type_rss_offloads;
        let driver = driver_name(info).unwrap_or_default();
        self.spread = spread_of(&driver, cfg.rx_queues, rss_hf != 0, cfg.symmetric_rss);
        self.rss_key = None;
        self.rss_hf = 0;
        if let RxSpread::Rss { key: wanted } = self.spread {
            self.rss_hf = rss_hf;
            conf.rxmode.mq_mode = sys::RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
            conf.rx_adv_conf.rss_conf.rss_key = std::ptr::null_mut();
            if wanted == RssKey::Symmetric {
                let len = symmetric_key_len(info.hash_key_size);
                let key = self.rss_key.insert(SYMMETRIC_RSS_KEY[..len].into());
                conf.rx_adv_conf.rss_conf.rss_key = key.as_mut_ptr();
                conf.rx_adv_conf.rss_conf.rss_key_len = len as u8;
            }
        }
        let fast_free = sys::RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE as u64;
        self.fast_free = info.tx_offload_capa & fast_free != 0;
        if self.fast_free {
            conf.txmode.offloads |= fast_free;
        }
        conf
    }

    /// The port's NUMA node (node 0 when DPDK does not know it).
    fn socket(&self) -> u32 {
        // SAFETY: a lookup of the port's NUMA node (-1 when unknown).
        let s = unsafe { sys::rte_eth_dev_socket_id(self.id) };
        s.max(0) as u32
    }

    fn setup_rx_queues(
        &self,
        n: u16,
        desc: u16,
        rxconf: &sys::rte_eth_rxconf,
        pool: &Mempool,
    ) -> Result<Vec<RxQueue>, DpdkError> {
        let socket = self.socket();
        (0..n)
            .map(|q| {
                // SAFETY: the port is configured with `n` RX queues; the pool
                // outlives the port (the owner closes ports before freeing pools).
                let ret = unsafe {
                    sys::rte_eth_rx_queue_setup(self.id, q, desc, socket, rxconf, pool.as_ptr())
                };
                if ret != 0 {
                    let what = self.what(&format!("setting up RX queue {q}"));
                    return Err(DpdkError::from_ret(what, ret));
                }
                Ok(RxQueue {
                    port: self.id,
                    queue: q,
                })
            })
            .collect()
    }

    fn setup_tx_queues(
        &self,
        n: u16,
        desc: u16,
        txconf: &sys::rte_eth_txconf,
    ) -> Result<Vec<TxQueue>, DpdkError> {
        let socket = self.socket();
        (0..n)
            .map(|q| {
                // SAFETY: the port is configured with `n` TX queues.
                let ret = unsafe { sys::rte_eth_tx_queue_setup(self.id, q, desc, socket, txconf) };
                if ret != 0 {
                    let what = self.what(&format!("setting up TX queue {q}"));
                    return Err(DpdkError::from_ret(what, ret));
                }
                Ok(TxQueue {
                    port: self.id,
                    queue: q,
                })
            })
            .collect()
    }

    /// Start the port (after `configure`).
    pub fn start(&mut self) -> Result<(), DpdkError> {
        // SAFETY: a control call on a configured port.
        let ret = unsafe { sys::rte_eth_dev_start(self.id) };
        if ret != 0 {
            return Err(DpdkError::from_ret(
                format!("starting port {} ({})", self.id, self.name),
                ret,
            ));
        }
        self.state = State::Started;
        self.check_symmetric_key();
        Ok(())
    }

    /// After start: does the device hash with the symmetric key it was
    /// given? Some drivers take a key only through an update after
    /// configure (net_null), so one is tried; a device that still reports
    /// another key is marked [`RssKey::SymmetricRefused`].
    fn check_symmetric_key(&mut self) {
        let Some(mut given) = self.rss_key.take() else {
            return;
        };
        if self
            .rss_key_in_use(given.len())
            .is_some_and(|k| k != *given)
        {
            let mut conf = sys::rte_eth_rss_conf {
                rss_key: given.as_mut_ptr(),
                rss_key_len: given.len() as u8,
                rss_hf: self.rss_hf,
            };
            // SAFETY: conf.rss_key points at rss_key_len readable bytes; the
            // port id is valid. An error leaves the old key, checked below.
            unsafe { sys::rte_eth_dev_rss_hash_update(self.id, &mut conf) };
            if self
                .rss_key_in_use(given.len())
                .is_some_and(|k| k != *given)
            {
                self.spread = RxSpread::Rss {
                    key: RssKey::SymmetricRefused,
                };
            }
        }
        self.rss_key = Some(given);
    }

    /// The first `len` bytes of the key the device hashes with (`None` when
    /// it does not tell).
    fn rss_key_in_use(&self, len: usize) -> Option<Vec<u8>> {
        // Longer than any device's key: drivers copy their whole key.
        let mut key = [0u8; 64];
        let mut conf = sys::rte_eth_rss_conf {
            rss_key: key.as_mut_ptr(),
            rss_key_len: len as u8,
            ..Default::default()
        };
        // SAFETY: conf.rss_key points at 64 writable bytes, more than any
        // driver's key; the port id is valid.
        let ret = unsafe { sys::rte_eth_dev_rss_hash_conf_get(self.id, &mut conf) };
        (ret == 0).then(|| key[..len].to_vec())
    }

    /// Stop the port. Call only when no lcore polls its queues any more.
    pub fn stop(&mut self) -> Result<(), DpdkError> {
        if self.state != State::Started {
            return Ok(());
        }
        // SAFETY: a control call; the owner guarantees no lcore uses the queues.
        let ret = unsafe { sys::rte_eth_dev_stop(self.id) };
        self.state = State::Configured;
        if ret != 0 {
            return Err(DpdkError::from_ret(
                format!("stopping port {} ({})", self.id, self.name),
                ret,
            ));
        }
        Ok(())
    }

    /// Stop and close the port, releasing its queues and every mbuf they held.
    pub fn close(&mut self) -> Result<(), DpdkError> {
        if self.state == State::Closed {
            return Ok(());
        }
        self.stop()?;
        // SAFETY: the port is stopped; afterwards it is never used again.
        let ret = unsafe { sys::rte_eth_dev_close(self.id) };
        self.state = State::Closed;
        if ret != 0 {
            return Err(DpdkError::from_ret(
                format!("closing port {} ({})", self.id, self.name),
                ret,
            ));
        }
        Ok(())
    }

    /// The port's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        let mut a = sys::rte_ether_addr::default();
        // SAFETY: a is a valid out-parameter.
        unsafe { sys::rte_eth_macaddr_get(self.id, &mut a) };
        a.addr_bytes
    }

    /// Link state, without waiting for negotiation.
    pub fn link(&self) -> LinkStatus {
        let mut l = sys::rte_eth_link::default();
        // SAFETY: l is a valid out-parameter.
        unsafe { sys::rte_eth_link_get_nowait(self.id, &mut l) };
        LinkStatus {
            up: l.link_status() != 0,
            speed_mbps: l.link_speed,
            full_duplex: l.link_duplex() != 0,
        }
    }

    /// Driver counters.
    pub fn stats(&self) -> PortStats {
        read_stats(self.id)
    }
}

/// Whether port `id`'s link is up, without waiting for negotiation
/// (false for an invalid port).
pub fn link_up(id: u16) -> bool {
    let mut l = sys::rte_eth_link::default();
    // SAFETY: l is a valid out-parameter; an invalid id leaves it zeroed.
    unsafe { sys::rte_eth_link_get_nowait(id, &mut l) };
    l.link_status() != 0
}

/// Driver counters of port `id` (zero for an invalid port).
pub fn read_stats(id: u16) -> PortStats {
    let mut s = sys::rte_eth_stats::default();
    // SAFETY: s is a valid out-parameter; DPDK checks the port id.
    let ret = unsafe { sys::rte_eth_stats_get(id, &mut s) };
    if ret != 0 {
        return PortStats::default();
    }
    PortStats {
        rx_packets: s.ipackets,
        tx_packets: s.opackets,
        rx_bytes: s.ibytes,
        tx_bytes: s.obytes,
        rx_missed: s.imissed,
        rx_errors: s.ierrors,
        tx_errors: s.oerrors,
        rx_nombuf: s.rx_nombuf,
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        if self.state != State::Idle {
            let _ = self.close();
        }
    }
}

impl RxQueue {
    /// Port id.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Receive into the free slots of `burst`; returns how many arrived.
    #[inline(always)]
    pub fn rx_burst(&mut self, burst: &mut MbufBurst) -> usize {
        let len = burst.len();
        let room = (BURST_SIZE - len) as u16;
        // SAFETY: slots len..BURST_SIZE are free; the driver writes at most
        // `room` mbuf pointers there and returns their count. We hold the only
        // token for this queue, so no other lcore polls it.
        let n = unsafe {
            sys::rte_eth_rx_burst(
                self.port,
                self.queue,
                burst.raw_slots().as_mut_ptr().add(len),
                room,
            )
        } as usize;
        // SAFETY: slots 0..len+n now hold mbufs owned by the burst.
        unsafe { burst.set_len(len + n) };
        n
    }
}

impl TxQueue {
    /// Port id.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// `rte_eth_tx_burst` over the burst's slots: how many of the first the
    /// driver took (they are its own now; the burst still counts them).
    #[inline(always)]
    fn hand_to_driver(&mut self, burst: &mut MbufBurst) -> usize {
        let n = burst.len() as u16;
        // SAFETY: slots 0..n hold mbufs we own; the driver takes the first
        // `sent` of them. We hold the only token for this TX queue.
        let sent = unsafe {
            sys::rte_eth_tx_burst(self.port, self.queue, burst.raw_slots().as_mut_ptr(), n)
        };
        sent as usize
    }

    /// Send the whole burst. What the driver takes is its own; what it refuses
    /// is freed here and counted in the outcome. The burst is empty afterwards.
    #[inline(always)]
    pub fn tx_burst(&mut self, burst: &mut MbufBurst) -> TxOutcome {
        self.tx_burst_inspect(burst, |_| {})
    }

    /// [`TxQueue::tx_burst`], with `refused` shown the packets the driver
    /// refused (if any) before they are freed.
    #[inline(always)]
    pub fn tx_burst_inspect(
        &mut self,
        burst: &mut MbufBurst,
        refused: impl FnOnce(&[super::Mbuf]),
    ) -> TxOutcome {
        if burst.is_empty() {
            return TxOutcome::default();
        }
        let sent = self.hand_to_driver(burst);
        if let Some(rest) = burst.as_slice().get(sent..).filter(|r| !r.is_empty()) {
            refused(rest);
        }
        let dropped = burst.free_from(sent);
        // SAFETY: slots 0..sent now belong to the driver: forget them, do not free.
        unsafe { burst.set_len(0) };
        TxOutcome { sent, dropped }
    }

    /// Send what the driver takes and keep the rest in the burst, in order,
    /// for the next try (a generator that must not lose a stamped packet);
    /// returns how many the driver took.
    #[inline(always)]
    pub fn tx_burst_retain(&mut self, burst: &mut MbufBurst) -> usize {
        if burst.is_empty() {
            return 0;
        }
        let sent = self.hand_to_driver(burst);
        // SAFETY: slots 0..sent now belong to the driver; the rest stay ours.
        unsafe { burst.keep_from(sent) };
        sent
    }
}

/// The driver's name from its info (`None` when it gives none).
fn driver_name(info: &sys::rte_eth_dev_info) -> Option<String> {
    if info.driver_name.is_null() {
        return None;
    }
    // SAFETY: driver_name is a static NUL-terminated string of the driver.
    let name = unsafe { CStr::from_ptr(info.driver_name) };
    Some(name.to_string_lossy().into_owned())
}

/// How `rx_queues` queues of a device of `driver` share the flows, given
/// whether it hashes IP/TCP/UDP (`hashes`) and whether the symmetric key is
/// wanted. The kernel-backed devices spread by themselves, whatever they report.
fn spread_of(driver: &str, rx_queues: u16, hashes: bool, symmetric: bool) -> RxSpread {
    if rx_queues <= 1 {
        RxSpread::Single
    } else if driver.starts_with("net_af_packet") {
        RxSpread::KernelFanout
    } else if driver.starts_with("net_tap") {
        RxSpread::KernelTun
    } else if hashes {
        let key = if symmetric {
            RssKey::Symmetric
        } else {
            RssKey::Driver
        };
        RxSpread::Rss { key }
    } else {
        RxSpread::None
    }
}

/// The length of the symmetric key for a device whose key is `hash_key_size`
/// bytes (0: it does not say; 40, the Toeplitz default).
fn symmetric_key_len(hash_key_size: u8) -> usize {
    match usize::from(hash_key_size) {
        0 => 40,
        n => n.min(SYMMETRIC_RSS_KEY.len()),
    }
}

/// The device name of port `id` (`net_pcap0`, `0000:01:00.0`, ...).
pub fn port_name(id: u16) -> String {
    let mut buf = [0 as std::os::raw::c_char; sys::RTE_ETH_NAME_MAX_LEN as usize];
    // SAFETY: buf has room for RTE_ETH_NAME_MAX_LEN bytes as DPDK requires.
    let ret = unsafe { sys::rte_eth_dev_get_name_by_port(id, buf.as_mut_ptr()) };
    if ret != 0 {
        return format!("port{id}");
    }
    // SAFETY: DPDK wrote a NUL-terminated name into buf.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// "DPDK has 2 ports: 0 (net_pcap0), 1 (net_null0)" — for error messages.
pub fn describe_ports() -> String {
    let n = Port::count();
    if n == 0 {
        return "DPDK found no ports: add a device (--vdev net_pcap0,... or a PCI address with -a)"
            .into();
    }
    let list: Vec<String> = (0..n).map(|i| format!("{i} ({})", port_name(i))).collect();
    format!(
        "DPDK has {n} port{}: {}",
        if n == 1 { "" } else { "s" },
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Toeplitz hash as RSS computes it (the spec's reference form).
    fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
        let window = |bit: usize| -> u32 {
            let b = bit / 8;
            let word = u64::from_be_bytes([
                key[b],
                key[b + 1],
                key[b + 2],
                key[b + 3],
                key[b + 4],
                0,
                0,
                0,
            ]);
            (word >> (64 - 32 - (bit % 8))) as u32
        };
        let mut hash = 0;
        for (i, byte) in input.iter().enumerate() {
            for b in 0..8 {
                if byte & (0x80 >> b) != 0 {
                    hash ^= window(i * 8 + b);
                }
            }
        }
        hash
    }

    /// (src, dst, sport, dport) as RSS hashes IPv4 TCP/UDP.
    fn tuple(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        [&src[..], &dst, &sport.to_be_bytes(), &dport.to_be_bytes()].concat()
    }

    #[test]
    fn symmetric_key_hashes_both_directions_alike() {
        let key = &SYMMETRIC_RSS_KEY[..40];
        let mut rng = fastrand::Rng::with_seed(7);
        let mut distinct = std::collections::BTreeSet::new();
        for _ in 0..1000 {
            let (a, b) = (rng.u32(..).to_be_bytes(), rng.u32(..).to_be_bytes());
            let (pa, pb) = (rng.u16(..), rng.u16(..));
            let there = toeplitz(key, &tuple(a, b, pa, pb));
            assert_eq!(there, toeplitz(key, &tuple(b, a, pb, pa)));
            distinct.insert(there);
        }
        // Still a hash: different flows mostly differ.
        assert!(distinct.len() > 990, "{}", distinct.len());
    }

    #[test]
    fn a_common_default_key_is_not_symmetric() {
        // The Microsoft reference key many drivers default to.
        let ms: [u8; 40] = [
            0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
            0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
            0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
        ];
        // The spec's own example: 66.9.149.187:2794 -> 161.142.100.80:1766.
        let t = tuple([66, 9, 149, 187], [161, 142, 100, 80], 2794, 1766);
        assert_eq!(toeplitz(&ms, &t), 0x51cc_c178);
        let back = tuple([161, 142, 100, 80], [66, 9, 149, 187], 1766, 2794);
        assert_ne!(toeplitz(&ms, &t), toeplitz(&ms, &back));
    }

    #[test]
    fn key_length_follows_the_device() {
        assert_eq!(symmetric_key_len(0), 40);
        assert_eq!(symmetric_key_len(40), 40);
        assert_eq!(symmetric_key_len(52), 52);
        assert_eq!(symmetric_key_len(64), 52);
        assert!(SYMMETRIC_RSS_KEY.chunks(2).all(|c| c == [0x6d, 0x5a]));
    }

    #[test]
    fn spread_names_who_distributes() {
        assert_eq!(spread_of("net_ixgbe", 1, true, true), RxSpread::Single);
        assert_eq!(
            spread_of("net_ixgbe", 4, true, true),
            RxSpread::Rss {
                key: RssKey::Symmetric
            }
        );
        assert_eq!(
            spread_of("net_i40e", 4, true, false),
            RxSpread::Rss {
                key: RssKey::Driver
            }
        );
        assert_eq!(
            spread_of("net_af_packet", 2, false, true),
            RxSpread::KernelFanout
        );
        assert_eq!(spread_of("net_tap", 2, true, true), RxSpread::KernelTun);
        assert_eq!(spread_of("net_memif", 2, false, true), RxSpread::None);
    }
}
