// SPDX-License-Identifier: GPL-2.0
/*
 * ib_core's C ABI: the device message functions (C's ibdev_err and its kin, in
 * drivers/infiniband/core/device.c). They take a printf format and its arguments, which a Rust
 * function cannot (C variadic functions are not stable Rust), so they are written in C, here,
 * on the C structure of the device (the core's face: its struct device has the device's name and
 * its parent). A message names the device as C's do: the parent's driver and name, then the RDMA
 * device's name ("mlx5_core 0000:00:04.0 mlx5_0: ..."); a device without a parent by its name.
 */
#include <linux/dev_printk.h>
#include <linux/printk.h>
#include <rdma/ib_verbs.h>

static void rdma_rs_ibdev_printk(const char *level, const struct ib_device *ibdev,
				 struct va_format *vaf)
{
	if (!ibdev) {
		printk("%s(NULL ib_device): %pV", level, vaf);
		return;
	}
	if (ibdev->dev.parent)
		dev_printk_emit(level[1] - '0', ibdev->dev.parent, "%s %s %s: %pV",
				dev_driver_string(ibdev->dev.parent), dev_name(ibdev->dev.parent),
				dev_name(&ibdev->dev), vaf);
	else
		printk("%s%s: %pV", level, dev_name(&ibdev->dev), vaf);
}

/* ibdev_err: an error message about ibdev. */
void ibdev_err(const struct ib_device *ibdev, const char *format, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, format);
	vaf.fmt = format;
	vaf.va = &args;
	rdma_rs_ibdev_printk(KERN_ERR, ibdev, &vaf);
	va_end(args);
}
EXPORT_SYMBOL(ibdev_err);
