# Networking of two-VM runs (sourced by /init). The harness gives each guest a virtio-net NIC
# joined to the other guest's, and writes to /etc/rdma-rs.conf: VMS=2, VM_INDEX (0 or 1), NET_MAC
# (the NIC's address), NET_IP (this guest's address/prefix) and PEER_IP (the other guest's).

# net_up: loads the NIC driver (/lib/modules/net/, in order), gives the NIC whose MAC is $NET_MAC
# the address $NET_IP and brings it up. The driver's modules stay loaded (/init puts them in
# KEEP_MODULES, so that unload_stack leaves dimlib, which the C stack shares with the NIC driver).
net_up() {
	while read -r _m; do
		grep -q "^$_m " /proc/modules || insmod "/lib/modules/net/$_m.ko" || return 1
	done </lib/modules/net/order
	net_if=$(net_ifname "$NET_MAC")
	if [ -z "$net_if" ]; then
		echo "no network interface with MAC $NET_MAC:"
		ip link
		return 1
	fi
	ip addr add "$NET_IP" dev "$net_if" && ip link set "$net_if" up && ip addr show "$net_if"
}

# net_ifname <mac>: the name of the network interface with that MAC address.
net_ifname() {
	for _i in /sys/class/net/*; do
		[ "$(cat "$_i/address" 2>/dev/null)" = "$1" ] && echo "${_i##*/}" && return
	done
}

# tcp_listening <port>: true when a TCP socket listens on <port> (IPv4 or IPv6).
tcp_listening() {
	_hex=$(printf '%04X' "$1")
	grep -Eq "^ *[0-9]+: [0-9A-F]+:$_hex [0-9A-F]+:[0-9A-F]+ 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# wait_listening <port> <secs>: waits until a TCP socket listens on <port>, for at most <secs>.
wait_listening() {
	_tries=$(($2 * 5))
	while [ $_tries -gt 0 ]; do
		tcp_listening "$1" && return 0
		sleep 0.2
		_tries=$((_tries - 1))
	done
	return 1
}
