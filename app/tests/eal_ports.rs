//! EAL in this test process (one EAL per process: this file holds one test):
//! net_ring and net_null ports come up with the queue counts asked for, a
//! device that cannot have that many queues is refused with a clear error,
//! mbufs allocated, bursted and freed all return to the pool, and a hashing
//! port takes the symmetric RSS key when asked.

mod common;
use fastpath::dpdk::{
    lcore, Eal, Mbuf, MbufBurst, Mempool, Port, PortConfig, RssKey, RxSpread, BURST_SIZE,
};

#[test]
fn ring_and_null_ports_come_up_with_expected_queues() {
    let mut args = vec!["eal_ports".to_string()];
    args.extend(common::eal_args(
        "ealports",
        &["net_ring0".to_string(), "net_null0".to_string()],
    ));
    args.extend(["--".to_string(), "--forward".to_string(), "0:1".to_string()]);
    let (eal, rest) = Eal::init(&args).expect("EAL init with --no-huge --no-pci and two vdevs");
    assert_eq!(
        rest,
        ["eal_ports", "--forward", "0:1"],
        "EAL hands back the app's part"
    );
    assert!(eal.version().starts_with("DPDK 2"), "{}", eal.version());
    assert_eq!(eal.port_count(), 2);
    assert_eq!(lcore::workers(), vec![1]);
    assert_eq!(lcore::main_lcore(), 0);

    // A second EAL init in the same process is refused, not undefined.
    let again = Eal::init(&args).unwrap_err();
    assert!(again.reason.contains("once per process"), "{again}");

    let pool = Mempool::new("test_pool", 4095, 32, eal.socket_id()).expect("pool");
    assert_eq!(pool.in_use(), 0);

    let mut ring = Port::open(0).unwrap();
    let mut null = Port::open(1).unwrap();
    assert_eq!(ring.name(), "net_ring0");
    assert_eq!(null.name(), "net_null0");
    assert!(Port::open(2)
        .unwrap_err()
        .reason
        .contains("DPDK has 2 ports"));

    // net_ring0 made from a bare vdev has one ring each way: asking for more
    // RX queues than the device has is a clear error, not a crash.
    let max_ring_rx = ring.info().unwrap().max_rx_queues;
    let too_many = PortConfig {
        rx_queues: max_ring_rx + 1,
        ..PortConfig::default()
    };
    let e = ring.configure(&too_many, &pool).unwrap_err();
    assert!(e.reason.contains("RX queues"), "{e}");

    let (rx, tx) = ring.configure(&PortConfig::default(), &pool).unwrap();
    assert_eq!((rx.len(), tx.len()), (1, 1));
    let null_cfg = PortConfig {
        rx_queues: 4,
        tx_queues: 2,
        ..PortConfig::default()
    };
    let (nrx, ntx) = null.configure(&null_cfg, &pool).unwrap();
    assert_eq!((nrx.len(), ntx.len()), (4, 2));
    ring.start().unwrap();
    null.start().unwrap();
    let ri = ring.info().unwrap();
    assert_eq!((ri.configured_rx_queues, ri.configured_tx_queues), (1, 1));
    let ni = null.info().unwrap();
    assert_eq!((ni.configured_rx_queues, ni.configured_tx_queues), (4, 2));
    assert!(ring.link().up);

    // Round trip through the ring port: what goes out on its TX comes back on
    // its RX (net_ring0 from a bare vdev loops TX to RX), contents intact.
    let (mut rxq, mut txq) = (
        rx.into_iter().next().unwrap(),
        tx.into_iter().next().unwrap(),
    );
    let mut burst = MbufBurst::new();
    for i in 0..BURST_SIZE {
        let mut m = Mbuf::alloc(&pool).expect("mbuf");
        assert!(m.append(&[i as u8; 64]));
        m.meta_mut().mark = i as u32;
        burst.push(m).unwrap();
    }
    assert!(burst.is_full());
    assert_eq!(pool.in_use(), BURST_SIZE as u32);
    let out = txq.tx_burst(&mut burst);
    // The ring has room for 1023: the whole burst goes.
    assert_eq!((out.sent, out.dropped), (BURST_SIZE, 0));
    assert!(burst.is_empty());
    let got = rxq.rx_burst(&mut burst);
    assert_eq!(got, out.sent);
    for (i, m) in burst.as_slice().iter().enumerate() {
        assert_eq!(m.data(), &[i as u8; 64][..]);
        assert_eq!(m.meta().mark, i as u32, "metadata travels with the mbuf");
    }
    // A split keeps both parts in order and every mbuf owned once.
    let mut head = burst.split_front(5);
    assert_eq!((head.len(), burst.len()), (5, got - 5));
    let marks = |b: &MbufBurst| {
        b.as_slice()
            .iter()
            .map(|m| m.meta().mark)
            .collect::<Vec<_>>()
    };
    assert_eq!(marks(&head), (0..5).collect::<Vec<_>>());
    assert_eq!(marks(&burst), (5..got as u32).collect::<Vec<_>>());
    assert_eq!(
        burst.split_front(BURST_SIZE + 1).len(),
        got - 5,
        "all of it"
    );
    assert!(burst.is_empty());
    assert_eq!(head.free_all(), 5);
    assert_eq!(pool.in_use(), 0, "nothing freed twice or lost in the split");

    // The null port's RX hands out mbufs from our pool; dropping the burst
    // frees them in bulk.
    let mut nrxq = nrx.into_iter().next().unwrap();
    let n = nrxq.rx_burst(&mut burst);
    assert!(n > 0, "net_null produces packets");
    drop(burst);

    drop(ntx);

    // net_null hashes (RSS): the driver's key unless the symmetric one is
    // asked for, which the port reads back after start (net_null takes it
    // only through an update, which the port then makes).
    assert_eq!(ring.rx_spread(), RxSpread::Single);
    let rss = |key| RxSpread::Rss { key };
    assert_eq!(null.rx_spread(), rss(RssKey::Driver));
    null.stop().unwrap();
    let symmetric = PortConfig {
        symmetric_rss: true,
        ..null_cfg
    };
    let (_nrx, _ntx) = null.configure(&symmetric, &pool).unwrap();
    null.start().unwrap();
    assert_eq!(null.rx_spread(), rss(RssKey::Symmetric));

    ring.close().unwrap();
    null.close().unwrap();
    assert_eq!(pool.in_use(), 0, "every mbuf back in the pool");
    pool.free().expect("pool whole");
    drop(eal);
}
