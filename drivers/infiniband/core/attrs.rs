// SPDX-License-Identifier: GPL-2.0

//! What a driver reports about its device and ports: the Rust forms of C's `ib_device_attr`,
//! `ib_port_attr` and `ib_port_immutable`, with the enumerations and flags netlink and sysfs print,
//! and the short texts (firmware version, node description) they show.

/// Node type (`enum rdma_node_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum NodeType {
    /// An InfiniBand channel adapter (`RDMA_NODE_IB_CA`).
    Ca = 1,
    /// A switch.
    Switch = 2,
    /// A router.
    Router = 3,
    /// An iWARP NIC.
    Rnic = 4,
    /// A user-space NIC.
    Usnic = 5,
    /// A user-space NIC over UDP.
    UsnicUdp = 6,
    /// An unspecified node.
    Unspecified = 7,
}

/// Link layer of a port (`IB_LINK_LAYER_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// Not known.
    Unspecified,
    /// InfiniBand.
    Infiniband,
    /// Ethernet (RoCE).
    Ethernet,
}

/// Logical port state (`enum ib_port_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum PortState {
    /// No state change.
    #[default]
    Nop = 0,
    /// Down.
    Down = 1,
    /// Initialized.
    Init = 2,
    /// Armed.
    Armed = 3,
    /// Active.
    Active = 4,
    /// Active, deferred.
    ActiveDefer = 5,
}

impl PortState {
    /// The state a device reports as a number (PortInfo's PortState); values past
    /// `ActiveDefer` read as `Nop`.
    pub fn from_raw(v: u8) -> Self {
        match v {
            1 => Self::Down,
            2 => Self::Init,
            3 => Self::Armed,
            4 => Self::Active,
            5 => Self::ActiveDefer,
            _ => Self::Nop,
        }
    }

    /// The state's name (C's `ib_port_state_to_str`), as sysfs and the kernel log print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Nop => "NOP",
            Self::Down => "DOWN",
            Self::Init => "INIT",
            Self::Armed => "ARMED",
            Self::Active => "ACTIVE",
            Self::ActiveDefer => "ACTIVE_DEFER",
        }
    }
}

/// A 16-byte GID, in network byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Gid(pub [u8; 16]);

/// The type of a GID table entry (`enum ib_gid_type`, C's numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GidType {
    /// An InfiniBand GID (`IB_GID_TYPE_IB`).
    #[default]
    Ib = 0,
    /// RoCE v1 (`IB_GID_TYPE_ROCE`).
    RoceV1 = 1,
    /// RoCE v2 (`IB_GID_TYPE_ROCE_UDP_ENCAP`).
    RoceV2 = 2,
}

impl GidType {
    /// The GID types of a port with `core_cap_flags` (C's `roce_gid_type_mask_support`), in
    /// C's order: InfiniBand alone on a port without RoCE, else RoCE v1 and v2 by its
    /// capabilities.
    pub fn of_port(core_cap_flags: u32) -> impl Iterator<Item = GidType> {
        let roce = core_cap_flags & (CORE_CAP_PROT_ROCE | CORE_CAP_PROT_ROCE_UDP_ENCAP) != 0;
        [
            (!roce).then_some(GidType::Ib),
            (core_cap_flags & CORE_CAP_PROT_ROCE != 0).then_some(GidType::RoceV1),
            (core_cap_flags & CORE_CAP_PROT_ROCE_UDP_ENCAP != 0).then_some(GidType::RoceV2),
        ]
        .into_iter()
        .flatten()
    }
}

impl Gid {
    /// The GID made of a subnet prefix and an interface id (both as numbers).
    pub fn from_parts(subnet_prefix: u64, interface_id: u64) -> Self {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&subnet_prefix.to_be_bytes());
        g[8..].copy_from_slice(&interface_id.to_be_bytes());
        Self(g)
    }
}

/// Per-port data that does not change while the device is registered (`ib_port_immutable`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortImmutable {
    /// `RDMA_CORE_CAP_*` flags (e.g. [`CORE_PORT_IBA_IB`]).
    pub core_cap_flags: u32,
    /// Entries in the GID table.
    pub gid_tbl_len: u32,
    /// Entries in the P_Key table.
    pub pkey_tbl_len: u16,
    /// Largest MAD the port handles (256 for IB).
    pub max_mad_size: u32,
}

/// `RDMA_CORE_CAP_IB_MAD`.
pub const CORE_CAP_IB_MAD: u32 = 0x1;
/// `RDMA_CORE_CAP_IB_SMI`.
pub const CORE_CAP_IB_SMI: u32 = 0x2;
/// `RDMA_CORE_CAP_IB_CM`.
pub const CORE_CAP_IB_CM: u32 = 0x4;
/// `RDMA_CORE_CAP_IB_SA`.
pub const CORE_CAP_IB_SA: u32 = 0x10;
/// `RDMA_CORE_CAP_OPA_MAD`: an Omni-Path port (32-bit LIDs).
pub const CORE_CAP_OPA_MAD: u32 = 0x20;
/// `RDMA_CORE_CAP_IB_GRH_REQUIRED`: every packet of the port needs a GRH.
pub const CORE_CAP_IB_GRH_REQUIRED: u32 = 0x8000;
/// `RDMA_CORE_CAP_AF_IB`.
pub const CORE_CAP_AF_IB: u32 = 0x1000;
/// `RDMA_CORE_CAP_PROT_IB`.
pub const CORE_CAP_PROT_IB: u32 = 0x0010_0000;
/// `RDMA_CORE_CAP_PROT_ROCE`.
pub const CORE_CAP_PROT_ROCE: u32 = 0x0020_0000;
/// `RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP`.
pub const CORE_CAP_PROT_ROCE_UDP_ENCAP: u32 = 0x0080_0000;
/// `RDMA_CORE_CAP_PROT_IWARP`.
pub const CORE_CAP_PROT_IWARP: u32 = 0x0040_0000;
/// `RDMA_CORE_PORT_IBA_IB`: the flags of an InfiniBand port.
pub const CORE_PORT_IBA_IB: u32 = CORE_CAP_PROT_IB
    | CORE_CAP_IB_MAD
    | CORE_CAP_IB_SMI
    | CORE_CAP_IB_CM
    | CORE_CAP_IB_SA
    | CORE_CAP_AF_IB;

/// A port's current attributes (`ib_port_attr`), as `query_port` returns them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortAttr {
    /// Logical state.
    pub state: PortState,
    /// Physical state (`IB_PORT_PHYS_STATE_*`: 5 is LinkUp, 3 Disabled).
    pub phys_state: u8,
    /// Largest MTU (`IB_MTU_*`: 1 = 256 .. 5 = 4096).
    pub max_mtu: u8,
    /// Active MTU.
    pub active_mtu: u8,
    /// GID table length.
    pub gid_tbl_len: u32,
    /// `IB_PORT_*` capability mask (what sysfs `cap_mask` and netlink `CAP_FLAGS` show).
    pub port_cap_flags: u32,
    /// Largest message.
    pub max_msg_sz: u32,
    /// P_Key violations.
    pub bad_pkey_cntr: u32,
    /// Q_Key violations.
    pub qkey_viol_cntr: u32,
    /// P_Key table length.
    pub pkey_tbl_len: u16,
    /// Base LID.
    pub lid: u32,
    /// LID of the subnet manager.
    pub sm_lid: u32,
    /// LID mask count.
    pub lmc: u8,
    /// Number of data VLs (encoded).
    pub max_vl_num: u8,
    /// Service level of the subnet manager.
    pub sm_sl: u8,
    /// Subnet timeout.
    pub subnet_timeout: u8,
    /// Init type reply.
    pub init_type_reply: u8,
    /// Active width (`IB_WIDTH_*`: 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X).
    pub active_width: u8,
    /// Active speed (`IB_SPEED_*`: 1 SDR, 2 DDR, 4 QDR, 8 FDR10, 16 FDR, 32 EDR, 64 HDR, 128 NDR,
    /// 256 XDR).
    pub active_speed: u16,
    /// `IB_PORT_*` capability mask 2.
    pub port_cap_flags2: u16,
}

kernel::impl_flags!(
    /// `IB_DEVICE_*` capability flags of a device ([`DeviceAttr::device_cap_flags`]; netlink's
    /// `CAP_FLAGS` prints them as the number `u64::from` gives).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DeviceCapFlags(u64);

    /// One device capability (`enum ib_device_cap_flags`, C's values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum DeviceCap {
        /// `IB_DEVICE_RESIZE_MAX_WR`.
        ResizeMaxWr = 1 << 0,
        /// `IB_DEVICE_BAD_PKEY_CNTR`.
        BadPkeyCntr = 1 << 1,
        /// `IB_DEVICE_BAD_QKEY_CNTR`.
        BadQkeyCntr = 1 << 2,
        /// `IB_DEVICE_RAW_MULTI`.
        RawMulti = 1 << 3,
        /// `IB_DEVICE_AUTO_PATH_MIG`.
        AutoPathMig = 1 << 4,
        /// `IB_DEVICE_CHANGE_PHY_PORT`.
        ChangePhyPort = 1 << 5,
        /// `IB_DEVICE_UD_AV_PORT_ENFORCE`.
        UdAvPortEnforce = 1 << 6,
        /// `IB_DEVICE_CURR_QP_STATE_MOD`.
        CurrQpStateMod = 1 << 7,
        /// `IB_DEVICE_SHUTDOWN_PORT`.
        ShutdownPort = 1 << 8,
        /// `IB_DEVICE_PORT_ACTIVE_EVENT`.
        PortActiveEvent = 1 << 10,
        /// `IB_DEVICE_SYS_IMAGE_GUID`.
        SysImageGuid = 1 << 11,
        /// `IB_DEVICE_RC_RNR_NAK_GEN`.
        RcRnrNakGen = 1 << 12,
        /// `IB_DEVICE_SRQ_RESIZE`.
        SrqResize = 1 << 13,
        /// `IB_DEVICE_N_NOTIFY_CQ`.
        NNotifyCq = 1 << 14,
        /// `IB_DEVICE_MEM_WINDOW`.
        MemWindow = 1 << 17,
        /// `IB_DEVICE_UD_IP_CSUM`.
        UdIpCsum = 1 << 18,
        /// `IB_DEVICE_XRC`.
        Xrc = 1 << 20,
        /// `IB_DEVICE_MEM_MGT_EXTENSIONS`.
        MemMgtExtensions = 1 << 21,
        /// `IB_DEVICE_MEM_WINDOW_TYPE_2A`.
        MemWindowType2a = 1 << 23,
        /// `IB_DEVICE_MEM_WINDOW_TYPE_2B`.
        MemWindowType2b = 1 << 24,
        /// `IB_DEVICE_RC_IP_CSUM`.
        RcIpCsum = 1 << 25,
        /// `IB_DEVICE_RAW_IP_CSUM`.
        RawIpCsum = 1 << 26,
        /// `IB_DEVICE_MANAGED_FLOW_STEERING`.
        ManagedFlowSteering = 1 << 29,
        /// `IB_DEVICE_RAW_SCATTER_FCS`.
        RawScatterFcs = 1 << 34,
        /// `IB_DEVICE_PCI_WRITE_END_PADDING`.
        PciWriteEndPadding = 1 << 36,
        /// `IB_DEVICE_FLUSH_GLOBAL`.
        FlushGlobal = 1 << 38,
        /// `IB_DEVICE_FLUSH_PERSISTENT`.
        FlushPersistent = 1 << 39,
        /// `IB_DEVICE_ATOMIC_WRITE`.
        AtomicWrite = 1 << 40,
        /// `IB_DEVICE_CC_DMA_BOUNCE`.
        CcDmaBounce = 1 << 41,
    }
);

impl DeviceCapFlags {
    /// The flags of a C driver's `device_cap_flags`, every bit kept (C's core passes them on
    /// as they are).
    pub(crate) fn from_c(bits: u64) -> Self {
        Self(bits)
    }
}

/// A device's attributes (`ib_device_attr`), as `query_device` returns them; cached at
/// registration as C does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Firmware version, as a number.
    pub fw_ver: u64,
    /// System image GUID, as the number it prints as.
    pub sys_image_guid: u64,
    /// Largest MR.
    pub max_mr_size: u64,
    /// Supported page sizes.
    pub page_size_cap: u64,
    /// IEEE vendor id.
    pub vendor_id: u32,
    /// Vendor part id.
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Largest number of QPs.
    pub max_qp: u32,
    /// Largest work queue.
    pub max_qp_wr: u32,
    /// Capability flags.
    pub device_cap_flags: DeviceCapFlags,
    /// Scatter/gather entries per send WR.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive WR.
    pub max_recv_sge: u32,
    /// Largest number of CQs.
    pub max_cq: u32,
    /// Largest CQ.
    pub max_cqe: u32,
    /// Largest number of MRs.
    pub max_mr: u32,
    /// Largest number of PDs.
    pub max_pd: u32,
    /// Outstanding RDMA reads/atomics per QP as target.
    pub max_qp_rd_atom: u32,
    /// Outstanding RDMA reads/atomics per QP as initiator.
    pub max_qp_init_rd_atom: u32,
    /// Atomic support (`IB_ATOMIC_*`: 0 none, 1 HCA, 2 global).
    pub atomic_cap: u8,
    /// Largest number of SRQs.
    pub max_srq: u32,
    /// Largest SRQ.
    pub max_srq_wr: u32,
    /// P_Keys per port.
    pub max_pkeys: u16,
    /// Local CA ack delay.
    pub local_ca_ack_delay: u8,
    /// Scatter/gather entries per RDMA read.
    pub max_sge_rd: u32,
    /// Pages one fast registration maps (C's `max_fast_reg_page_list_len`; 0 without fast
    /// registration).
    pub max_fast_reg_page_list_len: u32,
    /// Outstanding RDMA reads/atomics of the whole device as target.
    pub max_res_rd_atom: u32,
    /// Largest number of memory windows.
    pub max_mw: u32,
    /// Largest number of multicast groups.
    pub max_mcast_grp: u32,
    /// QPs per multicast group.
    pub max_mcast_qp_attach: u32,
    /// QPs attached to multicast groups in all (C computes it in `int` and lets it wrap).
    pub max_total_mcast_qp_attach: u32,
    /// Largest number of address handles.
    pub max_ah: u32,
    /// Scatter/gather entries per SRQ receive WR.
    pub max_srq_sge: u32,
    /// Valid bits of a completion timestamp.
    pub timestamp_mask: u64,
    /// The clock completion timestamps count, in kHz (0: none).
    pub hca_core_clock: u64,
    /// `IB_RAW_PACKET_CAP_*` of raw packet QPs.
    pub raw_packet_caps: u32,
    /// Most completions a CQ's moderation can wait for (0: no CQ moderation).
    pub max_cq_moderation_count: u16,
    /// Longest time a CQ's moderation can wait, in microseconds.
    pub max_cq_moderation_period: u16,
    /// The lkey every PD of the device may use for local access to all memory (C's
    /// `IBK_LOCAL_DMA_LKEY` with `ib_device.local_dma_lkey`); `None`: each PD gets a DMA MR of
    /// its own for it, as C's `ib_alloc_pd` does.
    pub local_dma_lkey: Option<u32>,
}

/// Longest node description (`IB_DEVICE_NODE_DESC_MAX`).
pub const NODE_DESC_MAX: usize = 64;

/// Longest firmware version string, with its NUL (`IB_FW_VERSION_NAME_MAX`).
pub const FW_VERSION_MAX: usize = 64;

/// A short text kept inline (firmware version, node description): at most `N` bytes.
#[derive(Clone, Copy)]
pub struct ShortText<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> ShortText<N> {
    /// An empty text.
    pub const fn new() -> Self {
        Self {
            buf: [0; N],
            len: 0,
        }
    }

    /// `s`, cut at its first NUL and at `N` bytes.
    pub fn from_bytes(s: &[u8]) -> Self {
        let mut t = Self::new();
        let s = s.split(|&c| c == 0).next().unwrap_or(&[]);
        let n = s.len().min(N);
        t.buf[..n].copy_from_slice(&s[..n]);
        t.len = n;
        t
    }

    /// The text.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> Default for ShortText<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> core::fmt::Write for ShortText<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let b = s.as_bytes();
        let n = b.len().min(N - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        if n < b.len() {
            Err(core::fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// A firmware version string.
pub type FwVersion = ShortText<{ FW_VERSION_MAX - 1 }>;

/// A node description.
pub type NodeDesc = ShortText<NODE_DESC_MAX>;
