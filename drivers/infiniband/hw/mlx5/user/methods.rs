// SPDX-License-Identifier: GPL-2.0

//! mlx5's ioctl methods and attributes (C's `std_types.c` and the UAR object of `main.c`):
//! the table the core dispatches on, and each method's work.
//!
//! - The UAR object's ALLOC and DESTROY ([`super::mmap`]).
//! - QUERY_PORT on the device object (`mlx5dv_query_port`): on a function that is neither a
//!   switchdev representor nor in multi-port mode (this driver has neither), C answers all
//!   zero (no flag set) for any valid port, `EINVAL` for another.
//! - GET_DATA_DIRECT_SYSFS_PATH: no data-direct device here, `ENODEV` as C.
//! - PD_QUERY on the PD object (`ibv_import_pd`): the PD's number.
//! - The context response attribute C adds to the core's QUERY_CONTEXT
//!   (`ibv_import_device`): the GET_CONTEXT response, built again.

use crate::{
    user::mmap::{self, MmapTable},
    user::uabi::QueryPortResp,
    user::ucontext::{self, Mlx5UContext},
};
use ib_core::user::spec::{
    attr, min_out, struct_out, type_in, type_out, AttrSpec, DriverAttrs, DriverMethod,
    DriverUObject, Kind, MethodAttrs,
};
use kernel::{prelude::*, sync::Arc, transmute::AsBytes, uapi};
use mlx5_core::{auxdev::Mlx5Device, cmd::commands::Commands, ifc::GeneralCaps};

/// `UVERBS_OBJECT_DEVICE`.
const OBJECT_DEVICE: u16 = uapi::uverbs_default_objects_UVERBS_OBJECT_DEVICE as u16;
/// `UVERBS_OBJECT_PD`.
const OBJECT_PD: u16 = uapi::uverbs_default_objects_UVERBS_OBJECT_PD as u16;
/// `UVERBS_METHOD_QUERY_CONTEXT`.
const METHOD_QUERY_CONTEXT: u16 = uapi::uverbs_methods_device_UVERBS_METHOD_QUERY_CONTEXT as u16;
/// `MLX5_IB_METHOD_QUERY_PORT`.
const METHOD_QUERY_PORT: u16 = uapi::mlx5_ib_device_methods_MLX5_IB_METHOD_QUERY_PORT as u16;
/// `MLX5_IB_METHOD_GET_DATA_DIRECT_SYSFS_PATH`.
const METHOD_DATA_DIRECT_PATH: u16 =
    uapi::mlx5_ib_device_methods_MLX5_IB_METHOD_GET_DATA_DIRECT_SYSFS_PATH as u16;
/// `MLX5_IB_METHOD_PD_QUERY`.
const METHOD_PD_QUERY: u16 = uapi::mlx5_ib_pd_methods_MLX5_IB_METHOD_PD_QUERY as u16;

/// QUERY_PORT's attributes (`MLX5_IB_ATTR_QUERY_PORT_*`).
mod query_port {
    pub(super) const PORT_NUM: u16 = 0x1000;
    pub(super) const RESP: u16 = 0x1001;
}
/// `MLX5_IB_ATTR_GET_DATA_DIRECT_SYSFS_PATH`.
const DATA_DIRECT_PATH: u16 = 0x1000;
/// PD_QUERY's attributes (`MLX5_IB_ATTR_QUERY_PD_*`).
mod pd_query {
    pub(super) const HANDLE: u16 = 0x1000;
    pub(super) const RESP_PDN: u16 = 0x1001;
}
/// `MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX`.
const QUERY_CONTEXT_RESP_UCTX: u16 = 0x1000;

/// `sizeof(struct mlx5_ib_uapi_query_port)`: its `UVERBS_ATTR_STRUCT` ends at `reg_c0`, the
/// last field.
const QUERY_PORT_SIZE: u16 = size_of::<QueryPortResp>() as u16;
/// `offsetofend(struct mlx5_ib_alloc_ucontext_resp, dump_fill_mkey)`, the shortest context
/// response C accepts, and the whole structure.
const UCTX_RESP_MIN: u16 =
    (core::mem::offset_of!(uapi::mlx5_ib_alloc_ucontext_resp, dump_fill_mkey) + size_of::<u32>())
        as u16;
const UCTX_RESP_SIZE: u16 = size_of::<uapi::mlx5_ib_alloc_ucontext_resp>() as u16;

static QUERY_PORT_ATTRS: [AttrSpec; 2] = [
    attr(query_port::PORT_NUM, type_in(4), true),
    attr(
        query_port::RESP,
        struct_out(QUERY_PORT_SIZE, QUERY_PORT_SIZE),
        true,
    ),
];

static DATA_DIRECT_ATTRS: [AttrSpec; 1] = [attr(DATA_DIRECT_PATH, min_out(0), true)];

static PD_QUERY_ATTRS: [AttrSpec; 2] = [
    attr(pd_query::HANDLE, Kind::IdrRead { object: OBJECT_PD }, true),
    attr(pd_query::RESP_PDN, type_out(4), true),
];

static QUERY_CONTEXT_ATTRS: [AttrSpec; 1] = [attr(
    QUERY_CONTEXT_RESP_UCTX,
    struct_out(UCTX_RESP_MIN, UCTX_RESP_SIZE),
    true,
)];

/// mlx5's own ioctl methods.
pub(crate) static DRIVER_METHODS: [DriverMethod; 5] = [
    DriverMethod {
        object: mmap::OBJECT_UAR,
        method: mmap::METHOD_UAR_ALLOC,
        attrs: &mmap::ALLOC_ATTRS,
    },
    DriverMethod {
        object: mmap::OBJECT_UAR,
        method: mmap::METHOD_UAR_DESTROY,
        attrs: &mmap::DESTROY_ATTRS,
    },
    DriverMethod {
        object: OBJECT_DEVICE,
        method: METHOD_QUERY_PORT,
        attrs: &QUERY_PORT_ATTRS,
    },
    DriverMethod {
        object: OBJECT_DEVICE,
        method: METHOD_DATA_DIRECT_PATH,
        attrs: &DATA_DIRECT_ATTRS,
    },
    DriverMethod {
        object: OBJECT_PD,
        method: METHOD_PD_QUERY,
        attrs: &PD_QUERY_ATTRS,
    },
];

/// The attributes mlx5 adds to the core's methods.
pub(crate) static DRIVER_ATTRS: [DriverAttrs; 1] = [DriverAttrs {
    object: OBJECT_DEVICE,
    method: METHOD_QUERY_CONTEXT,
    attrs: &QUERY_CONTEXT_ATTRS,
}];

/// Runs mlx5 method `m` for a context whose mmap table is `table`, on a function with
/// `num_ports` ports; `pdn_of` gives the number of the PD a PD attribute names.
pub(crate) fn driver_method(
    dev: &Mlx5Device,
    cmds: &Commands,
    table: &Arc<MmapTable>,
    num_ports: u32,
    pdn_of: &dyn Fn(u16) -> Result<u32>,
    m: &DriverMethod,
    attrs: &dyn MethodAttrs,
) -> Result<Option<DriverUObject>> {
    match (m.object, m.method) {
        (mmap::OBJECT_UAR, mmap::METHOD_UAR_ALLOC) => {
            mmap::uar_alloc(dev, cmds, table, attrs).map(Some)
        }
        // The core destroys the object once this succeeded (C's handler does nothing).
        (mmap::OBJECT_UAR, mmap::METHOD_UAR_DESTROY) => Ok(None),
        (OBJECT_DEVICE, METHOD_QUERY_PORT) => query_port(num_ports, attrs).map(|()| None),
        // C: no data-direct device on this function.
        (OBJECT_DEVICE, METHOD_DATA_DIRECT_PATH) => Err(ENODEV),
        (OBJECT_PD, METHOD_PD_QUERY) => {
            let pdn = pdn_of(pd_query::HANDLE)?;
            attrs.copy_to(pd_query::RESP_PDN, &pdn.to_le_bytes())?;
            Ok(None)
        }
        _ => Err(EPROTONOSUPPORT),
    }
}

/// QUERY_PORT (C's handler): the port must be one of the function's (`EINVAL`; a port number
/// that cannot be read is `EFAULT`, as C turns every copy failure into); neither switchdev nor
/// multi-port information applies here, so the answer is the all-zero structure.
fn query_port(num_ports: u32, attrs: &dyn MethodAttrs) -> Result {
    let mut raw = [0u8; 4];
    attrs
        .copy_from(query_port::PORT_NUM, &mut raw)
        .map_err(|_| EFAULT)?;
    let port = u32::from_le_bytes(raw);
    if port == 0 || port > num_ports {
        return Err(EINVAL);
    }
    let info = QueryPortResp(Default::default());
    attrs.copy_to_struct_or_zero(query_port::RESP, info.as_bytes())
}

/// QUERY_CONTEXT's mlx5 part (C's `mlx5_ib_query_ucontext`): context `ctx`'s GET_CONTEXT
/// response built again, its `response_length` the attribute's length up to the structure's.
pub(crate) fn query_ucontext(
    caps: &GeneralCaps,
    num_ports: u16,
    ctx: &Mlx5UContext,
    attrs: &dyn MethodAttrs,
) -> Result {
    let outlen = attrs.len(QUERY_CONTEXT_RESP_UCTX)?;
    let resp = ucontext::response(caps, num_ports, ctx.cqe_version, outlen);
    attrs.copy_to_struct_or_zero(QUERY_CONTEXT_RESP_UCTX, resp.as_bytes())
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_methods)]
mod tests {
    use super::*;
    use core::cell::RefCell;

    /// A request's attributes: one input, and the outputs written.
    struct Fake {
        input: Option<KVec<u8>>,
        out_len: usize,
        written: RefCell<Option<(u16, KVec<u8>)>>,
    }

    impl Fake {
        fn new(input: Option<&[u8]>, out_len: usize) -> Result<Self> {
            let input = match input {
                Some(b) => {
                    let mut v = KVec::new();
                    v.extend_from_slice(b, GFP_KERNEL)?;
                    Some(v)
                }
                None => None,
            };
            Ok(Self {
                input,
                out_len,
                written: RefCell::new(None),
            })
        }
    }

    impl MethodAttrs for Fake {
        fn get_const(&self, _id: u16, _max: u64) -> Result<u64> {
            Err(ENOENT)
        }

        fn copy_from(&self, _id: u16, to: &mut [u8]) -> Result {
            let input = self.input.as_ref().ok_or(ENOENT)?;
            to.get_mut(..input.len())
                .ok_or(EINVAL)?
                .copy_from_slice(input);
            Ok(())
        }

        fn len(&self, _id: u16) -> Result<usize> {
            Ok(self.out_len)
        }

        fn copy_to(&self, id: u16, from: &[u8]) -> Result {
            let mut v = KVec::new();
            v.extend_from_slice(from, GFP_KERNEL)?;
            *self.written.borrow_mut() = Some((id, v));
            Ok(())
        }

        fn copy_to_struct_or_zero(&self, id: u16, from: &[u8]) -> Result {
            self.copy_to(id, from)
        }

        fn pd_object(&self, _id: u16) -> Result<&dyn core::any::Any> {
            Err(EINVAL)
        }
    }

    #[test]
    fn query_port_answers_zero_for_a_port_of_the_function() -> Result {
        let f = Fake::new(Some(&1u32.to_le_bytes()), 40)?;
        assert_eq!(query_port(1, &f), Ok(()));
        let w = f.written.borrow();
        let (id, bytes) = w.as_ref().ok_or(EINVAL)?;
        assert_eq!(*id, query_port::RESP);
        assert_eq!(bytes.len(), 40);
        assert!(bytes.iter().all(|b| *b == 0));
        // Port 0, and a port past the function's: EINVAL, nothing written.
        for (port, ports) in [(0u32, 1), (2, 1), (3, 2)] {
            let f = Fake::new(Some(&port.to_le_bytes()), 40)?;
            assert_eq!(query_port(ports, &f), Err(EINVAL));
            assert!(f.written.borrow().is_none());
        }
        // A port number that cannot be read: EFAULT (C's answer to any copy failure).
        assert_eq!(query_port(1, &Fake::new(None, 40)?), Err(EFAULT));
        Ok(())
    }

    #[test]
    fn the_tables_have_c_ids_and_sizes() {
        assert_eq!(QUERY_PORT_SIZE, 40);
        assert_eq!((UCTX_RESP_MIN, UCTX_RESP_SIZE), (72, 72));
        let ids: [(u16, u16); 5] = [
            (0x1008, 0x1000),
            (0x1008, 0x1001),
            (0, 0x1000),
            (0, 0x1001),
            (1, 0x1000),
        ];
        for (m, id) in DRIVER_METHODS.iter().zip(ids) {
            assert_eq!((m.object, m.method), id);
        }
        assert_eq!((DRIVER_ATTRS[0].object, DRIVER_ATTRS[0].method), (0, 4));
    }

    #[test]
    fn the_context_response_is_sized_by_the_attribute() -> Result {
        let caps = GeneralCaps::new();
        let table = MmapTable::new()?;
        let ctx = Mlx5UContext::for_test(1, table);
        for (len, want) in [(72usize, 72u32), (200, 72)] {
            let f = Fake::new(None, len)?;
            query_ucontext(&caps, 1, &ctx, &f)?;
            let w = f.written.borrow();
            let (id, bytes) = w.as_ref().ok_or(EINVAL)?;
            assert_eq!(*id, QUERY_CONTEXT_RESP_UCTX);
            // response_length at offset 40, cqe_version at 44, num_ports at 32.
            let at = |o: usize| bytes.get(o..o + 4).ok_or(EINVAL);
            assert_eq!(at(40)?, &want.to_le_bytes()[..]);
            assert_eq!(bytes.get(44), Some(&1));
            assert_eq!(bytes.get(32..34), Some(&1u16.to_le_bytes()[..]));
        }
        Ok(())
    }
}
