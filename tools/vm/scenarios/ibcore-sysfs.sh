# ibcore-sysfs: /sys/class/infiniband/<dev>/ of the Rust ib_core, for the test provider's devices
# (samples/ib_test_provider.rs), against what the C ib_core creates for mlx5_0 (minus mlx5's own
# files and the PMA counters/, which need a driver with MADs):
#   - each device's tree is exactly the expected file list, with C's modes;
#   - the values are what the provider set, in C's formats;
#   - node_desc is writable with C's semantics (bytes as written, newline included, at most 64),
#     read-only files refuse writes;
#   - a file held open across unregistration reads ENODEV, reads racing with unregistration are
#     harmless;
#   - unregistration leaves nothing behind, over repeated load/unload cycles; no leak, no warning.
# stacks: rust

prov="$stack_dir/ib_test_provider.ko"
cls=/sys/class/infiniband

# expected_tree <ports>: "mode path" of every entry below a device, sorted. GID tables have 4
# entries, P_Key tables 2 (the provider's). hw_rev and hca_type are the provider's own files
# (C's ops.device_group), the rest comes from ib_core and the driver core.
expected_tree() {
	{
		echo "755 ."
		for f in fw_ver hca_type hw_rev node_guid node_type sys_image_guid; do
			echo "444 ./$f"
		done
		echo "644 ./node_desc"
		echo "644 ./uevent"
		echo "777 ./subsystem"
		echo "755 ./ports"
		p=1
		while [ $p -le "$1" ]; do
			d=./ports/$p
			echo "755 $d"
			for f in cap_mask lid lid_mask_count link_layer phys_state rate sm_lid sm_sl state; do
				echo "444 $d/$f"
			done
			for t in gids gid_attrs gid_attrs/ndevs gid_attrs/types pkeys; do
				echo "755 $d/$t"
			done
			for i in 0 1 2 3; do
				echo "444 $d/gids/$i"
				echo "444 $d/gid_attrs/ndevs/$i"
				echo "444 $d/gid_attrs/types/$i"
			done
			echo "444 $d/pkeys/0"
			echo "444 $d/pkeys/1"
			p=$((p + 1))
		done
	} | sort
}

# actual_tree <dev>
actual_tree() {
	(cd "$cls/$1/" && find . | while read -r f; do echo "$(stat -c %a "$f") $f"; done | sort)
}

# tree_matches <dev> <ports>: no difference between the actual and expected trees.
tree_matches() {
	expected_tree "$2" >/tmp/expected
	actual_tree "$1" >/tmp/actual
	diff /tmp/expected /tmp/actual
}

# values_match <dev> <number> <ports>: every value the provider set, in C's format.
values_match() {
	_d=$cls/$1
	_n=$2
	_bad=
	_want() { # file expected
		_got=$(cat "$_d/$1" 2>&1)
		[ "$_got" = "$2" ] || _bad="$_bad$1: got '$_got', expected '$2'
"
	}
	_want node_type "1: CA"
	_want node_guid "0002:c903:00ab:cd0$_n"
	_want sys_image_guid "0002:c903:00ab:cd0$_n"
	_want fw_ver "7.3.$_n"
	_want node_desc "ib_test_provider device $_n"
	_want hw_rev "$_n"
	_want hca_type "MT4119"
	_want uevent "NAME=$1"
	_p=1
	while [ $_p -le "$3" ]; do
		_want ports/$_p/state "4: ACTIVE"
		_want ports/$_p/phys_state "5: LinkUp"
		_want ports/$_p/lid "$(printf '0x%x' $((0x100 + 16 * _n + _p)))"
		_want ports/$_p/sm_lid "0x1"
		_want ports/$_p/lid_mask_count "0"
		_want ports/$_p/sm_sl "0"
		_want ports/$_p/cap_mask "0x2651e848"
		_want ports/$_p/rate "100 Gb/sec (4X EDR)"
		_want ports/$_p/link_layer "InfiniBand"
		_want ports/$_p/gids/0 "fe80:0000:0000:0000:0002:c903:00ab:cd0$_n"
		_want ports/$_p/gids/3 "0000:0000:0000:0000:0000:0000:0000:0000"
		_want ports/$_p/pkeys/0 "0xffff"
		_want ports/$_p/pkeys/1 "0x0000"
		_want ports/$_p/gid_attrs/types/0 "IB/RoCE v1"
		_want ports/$_p/gid_attrs/types/1 "cat: read error: Invalid argument"
		_want ports/$_p/gid_attrs/ndevs/0 "cat: read error: Invalid argument"
		_p=$((_p + 1))
	done
	printf '%s' "$_bad"
	[ -z "$_bad" ]
}

# class_empty: /sys/class/infiniband has no entry and the class's virtual directory is gone.
class_empty() {
	[ -z "$(ls -A $cls)" ] && [ ! -e /sys/devices/virtual/infiniband ] || {
		ls -lA $cls /sys/devices/virtual/infiniband 2>&1
		return 1
	}
}

check "load ib_core alone" load_stack ib_core
check "the infiniband class exists, empty" class_empty
check "the test provider registers ibtest0 (1 port) and ibtest1 (2 ports)" insmod "$prov" devices=2 ports=2
check_output "the class lists both devices" '^ibtest0 ibtest1$' sh -c "ls $cls | tr '\n' ' ' | sed 's/ \$//'"
check_output "ibtest1 is a virtual device (no parent)" '\.\./\.\./devices/virtual/infiniband/ibtest1$' readlink $cls/ibtest1
check "ibtest0: the file list and modes are C's" tree_matches ibtest0 1
check "ibtest1: the file list and modes are C's" tree_matches ibtest1 2
check "ibtest0: the values are the provider's, in C's formats" values_match ibtest0 0 1
check "ibtest1: the values are the provider's, in C's formats" values_match ibtest1 1 2

# node_desc: written through the driver, kept as written (C: newline included, at most 64 bytes,
# the text ends at a NUL), read back with a newline.
nd=$cls/ibtest1/node_desc
hex() { od -An -tx1 "$1" | tr -d ' \n'; }
check "node_desc takes a write without newline" sh -c "printf 'new desc' > $nd"
check_output "node_desc reads it back" '^new desc$' cat $nd
check "node_desc takes echo's newline as C does" sh -c "echo foo > $nd"
check_output "node_desc keeps the newline (foo, newline, newline)" '^666f6f0a0a$' hex $nd
check "node_desc takes 70 bytes" sh -c "printf '%070d' 0 > $nd"
check_output "node_desc keeps the first 64" '^0{64}$' cat $nd
check_output "the other device's node_desc is untouched" '^ib_test_provider device 0$' cat $cls/ibtest0/node_desc
check_output "read-only files refuse writes" 'Permission denied' sh -c "echo 2 > $cls/ibtest1/node_type 2>&1; echo 2 > $cls/ibtest1/ports/1/lid 2>&1; exit 0"
check_output "node_type is unchanged" '^1: CA$' cat $cls/ibtest1/node_type

# A file held open across unregistration, and readers racing with it.
exec 3<"$cls/ibtest1/ports/2/state"
(while :; do cat $cls/ibtest*/ports/*/state $cls/ibtest*/node_desc >/dev/null 2>&1; done) &
reader=$!
sleep 1
check "the provider unloads while files are read" rmmod ib_test_provider
kill $reader
wait $reader 2>/dev/null
check_output "the file held open reads ENODEV" 'No such device' sh -c 'cat <&3 2>&1; exit 0'
exec 3<&-
check "unregistration leaves nothing in the class" class_empty

check "a larger provider: three devices, the last with four ports" insmod "$prov" devices=3 ports=4
check "ibtest2: the file list and modes are C's" tree_matches ibtest2 4
check "ibtest2: the values are the provider's" values_match ibtest2 2 4
check "node_desc starts over on a new registration" values_match ibtest1 1 1
check "and unloads" rmmod ib_test_provider
check "nothing is left" class_empty

cycles=0
for i in 1 2 3 4 5; do
	insmod "$prov" devices=2 ports=2 &&
		tree_matches ibtest1 2 >/dev/null &&
		values_match ibtest1 1 2 >/dev/null &&
		rmmod ib_test_provider &&
		class_empty >/dev/null &&
		cycles=$((cycles + 1))
done
check_output "5 load/unload cycles with the tree checked each time" '^5$' echo $cycles
check "ib_core unloads" unload_stack
check "no module of the stack is left" test -z "$(stack_loaded)"
check "the class is gone with ib_core" test ! -e $cls
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"
