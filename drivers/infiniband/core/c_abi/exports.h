/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ib_core's C ABI: the functions of drivers/infiniband/core/c_abi/ (Rust, with C's names and
 * signatures), exported as C's ib_core exports them (EXPORT_SYMBOL or EXPORT_SYMBOL_GPL, the
 * same choice per symbol), so that C modules built against include/rdma/ link to this core.
 * Included by ib_core_exports.c. The contract they come from: c_abi/imports.txt.
 */

#define EXPORT_C_ABI(sym) extern int sym; EXPORT_SYMBOL(sym)

/* c_abi/clients.rs */
EXPORT_C_ABI(ib_register_client);
EXPORT_C_ABI(ib_unregister_client);
EXPORT_C_ABI(ib_set_client_data);
EXPORT_C_ABI(ib_get_net_dev_by_params);

/* c_abi/queries.rs */
EXPORT_C_ABI(ib_query_port);
EXPORT_C_ABI(rdma_dev_access_netns);
EXPORT_C_ABI(ib_modify_port);
EXPORT_C_ABI(rdma_node_get_transport);
EXPORT_C_ABI(ib_query_pkey);
EXPORT_C_ABI(ib_find_pkey);
EXPORT_C_ABI(ib_find_gid);
EXPORT_C_ABI(ib_get_device_fw_str);

/* c_abi/events.rs */
EXPORT_C_ABI(ib_register_event_handler);
EXPORT_C_ABI(ib_unregister_event_handler);
EXPORT_C_ABI(ib_dispatch_event);

/* c_abi/cache.rs */
EXPORT_C_ABI(ib_get_cached_pkey);
EXPORT_C_ABI(ib_find_cached_pkey);
EXPORT_C_ABI(ib_get_cached_port_state);

/* c_abi/messages.rs */
EXPORT_C_ABI(ib_event_msg);
EXPORT_C_ABI(ib_wc_status_msg);
EXPORT_C_ABI(ib_cache_gid_type_str);
EXPORT_C_ABI(ib_cache_gid_parse_type_str);

/* c_abi/addr_size.rs */
EXPORT_C_ABI(rdma_addr_size);
EXPORT_C_ABI(rdma_addr_size_in6);
EXPORT_C_ABI(rdma_addr_size_kss);

/* c_abi/pd.rs */
EXPORT_C_ABI(__ib_alloc_pd);
EXPORT_C_ABI(ib_dealloc_pd_user);

/* c_abi/cq.rs */
EXPORT_C_ABI(__ib_create_cq);
EXPORT_C_ABI(ib_destroy_cq_user);
EXPORT_C_ABI(__ib_alloc_cq);
EXPORT_C_ABI(ib_free_cq);
EXPORT_C_ABI(ib_process_cq_direct);

/* c_abi/cq_pool.rs */
EXPORT_C_ABI(ib_cq_pool_get);
EXPORT_C_ABI(ib_cq_pool_put);

/* c_abi/qp.rs */
EXPORT_C_ABI(ib_create_qp_kernel);
EXPORT_C_ABI(ib_modify_qp);
EXPORT_C_ABI(ib_query_qp);
EXPORT_C_ABI(ib_destroy_qp_user);
EXPORT_C_ABI(ib_drain_qp);
EXPORT_C_ABI(ib_modify_qp_is_ok);
EXPORT_C_ABI(ib_attach_mcast);
EXPORT_C_ABI(ib_detach_mcast);

/* c_abi/ah.rs */
EXPORT_C_ABI(rdma_create_ah);
EXPORT_C_ABI(rdma_destroy_ah_user);

/* c_abi/mr.rs */
EXPORT_C_ABI(ib_dereg_mr_user);
EXPORT_C_ABI(ib_alloc_mr);
EXPORT_C_ABI(ib_map_mr_sg);
EXPORT_C_ABI(ib_map_mr_sg_pi);
EXPORT_C_ABI(ib_check_mr_status);

/* c_abi/mr_pool.rs */
EXPORT_C_ABI(ib_mr_pool_init);
EXPORT_C_ABI(ib_mr_pool_destroy);
EXPORT_C_ABI(ib_mr_pool_get);
EXPORT_C_ABI(ib_mr_pool_put);

/* c_abi/rdma_rw.rs */
EXPORT_C_ABI(rdma_rw_ctx_init);
EXPORT_C_ABI(rdma_rw_ctx_destroy);
EXPORT_C_ABI(rdma_rw_ctx_wrs);
EXPORT_C_ABI(rdma_rw_ctx_post);
EXPORT_C_ABI(rdma_rw_ctx_signature_init);
EXPORT_C_ABI(rdma_rw_ctx_destroy_signature);
EXPORT_C_ABI(rdma_rw_mr_factor);

/* c_abi/sg_to_pages.rs */
EXPORT_C_ABI(ib_sg_to_pages);

/* c_abi/restrack.rs */
EXPORT_C_ABI(rdma_restrack_new);
EXPORT_C_ABI(rdma_restrack_parent_name);
EXPORT_C_ABI(rdma_restrack_add);
EXPORT_C_ABI(rdma_restrack_set_name);
EXPORT_C_ABI(rdma_restrack_del);

/* c_abi/srq.rs */
EXPORT_C_ABI(ib_create_srq_user);
EXPORT_C_ABI(ib_modify_srq);
EXPORT_C_ABI(ib_destroy_srq_user);

/* c_abi/mad_agent.rs */
EXPORT_C_ABI(ib_register_mad_agent);
EXPORT_C_ABI(ib_unregister_mad_agent);
EXPORT_C_ABI(ib_create_send_mad);
EXPORT_C_ABI(ib_free_send_mad);
EXPORT_C_ABI(ib_post_send_mad);
EXPORT_C_ABI(ib_modify_mad);
EXPORT_C_ABI(ib_free_recv_mad);

/* c_abi/gid.rs */
EXPORT_C_ABI(rdma_query_gid);
EXPORT_C_ABI(rdma_get_gid_attr);
EXPORT_C_ABI(rdma_read_gid_attr_ndev_rcu);
EXPORT_C_ABI(roce_gid_type_mask_support);
EXPORT_C_ABI(rdma_find_gid);
EXPORT_C_ABI(rdma_find_gid_by_port);
EXPORT_C_ABI(rdma_put_gid_attr);
EXPORT_C_ABI(rdma_destroy_ah_attr);
EXPORT_C_ABI(rdma_move_ah_attr);
EXPORT_C_ABI(ib_init_ah_attr_from_wc);
EXPORT_C_ABI(ib_create_ah_from_wc);

/* c_abi/sa_path.rs */
EXPORT_C_ABI(ib_init_ah_attr_from_path);

/* c_abi/sa_client.rs */
EXPORT_C_ABI(ib_sa_register_client);
EXPORT_C_ABI(ib_sa_unregister_client);
EXPORT_C_ABI(ib_sa_path_rec_get);
EXPORT_C_ABI(ib_sa_service_rec_get);
EXPORT_C_ABI(ib_sa_cancel_query);
EXPORT_C_ABI(ib_sa_pack_path);
EXPORT_C_ABI(ib_sa_unpack_path);
EXPORT_C_ABI(ib_sa_pack_service);
EXPORT_C_ABI(ib_sa_unpack_service);
EXPORT_C_ABI(ib_sa_guid_info_rec_query);

/* c_abi/sa_multicast.rs */
EXPORT_C_ABI(ib_sa_join_multicast);
EXPORT_C_ABI(ib_sa_free_multicast);
EXPORT_C_ABI(ib_sa_get_mcmember_rec);
EXPORT_C_ABI(ib_init_ah_from_mcmember);

/* c_abi/port_groups.rs */
EXPORT_C_ABI(ib_port_register_client_groups);
EXPORT_C_ABI(ib_port_unregister_client_groups);

/* c_abi/rdma_nl.rs */
EXPORT_C_ABI(rdma_nl_register);
EXPORT_C_ABI(rdma_nl_unregister);
EXPORT_C_ABI(ibnl_put_msg);
EXPORT_C_ABI(ibnl_put_attr);
EXPORT_C_ABI(rdma_nl_unicast);
EXPORT_C_ABI(rdma_nl_unicast_wait);
EXPORT_C_ABI(rdma_nl_multicast);

/* c_abi/addr.rs */
EXPORT_C_ABI(rdma_copy_src_l2_addr);
EXPORT_C_ABI(rdma_translate_ip);
EXPORT_C_ABI(rdma_resolve_ip);
EXPORT_C_ABI(rdma_addr_cancel);

/* c_abi/rates.rs */
EXPORT_C_ABI(ib_rate_to_mbps);

/* c_abi/absent_ops.rs */
EXPORT_C_ABI(ib_get_vf_config);
EXPORT_C_ABI(ib_get_vf_stats);
EXPORT_C_ABI(ib_set_vf_guid);
EXPORT_C_ABI(ib_get_vf_guid);
EXPORT_C_ABI(ib_set_vf_link_state);
EXPORT_C_ABI(rdma_set_cq_moderation);
EXPORT_C_ABI(rdma_alloc_netdev);
EXPORT_C_ABI(rdma_init_netdev);

/* c_abi/driver/alloc.rs */
EXPORT_C_ABI(_ib_alloc_device);
EXPORT_C_ABI(ib_set_device_ops);
EXPORT_C_ABI(ib_device_put);

/* c_abi/driver/registration.rs */
EXPORT_C_ABI(ib_dealloc_device);
EXPORT_C_ABI(ib_register_device);
EXPORT_C_ABI(ib_unregister_device_queued);
EXPORT_C_ABI(ib_unregister_driver);

/* c_abi/driver/netdev.rs, eth_speed.rs */
EXPORT_C_ABI(ib_device_set_netdev);
EXPORT_C_ABI(ib_device_get_netdev);
EXPORT_C_ABI(ib_device_get_by_netdev);
EXPORT_C_ABI(ib_get_eth_speed);

/* c_abi/driver/link.rs */
EXPORT_C_ABI(rdma_link_register);
EXPORT_C_ABI(rdma_link_unregister);

/* c_abi/driver/udata.rs */
EXPORT_C_ABI(_ib_copy_validate_udata_in);
EXPORT_C_ABI(_ib_respond_udata);

/* c_abi/driver/umem.rs */
EXPORT_C_ABI(ib_umem_get_attr_or_va);
EXPORT_C_ABI(ib_umem_release);
EXPORT_C_ABI(ib_umem_check_rereg);
EXPORT_C_ABI(ib_dma_virt_map_sg);

/* c_abi/driver/user_mmap.rs */
EXPORT_C_ABI(rdma_user_mmap_entry_insert);
EXPORT_C_ABI(rdma_user_mmap_entry_get);
EXPORT_C_ABI(rdma_user_mmap_entry_put);
EXPORT_C_ABI(rdma_user_mmap_entry_remove);

/* c_abi/driver/hw_stats.rs */
EXPORT_C_ABI(rdma_alloc_hw_stats_struct);
