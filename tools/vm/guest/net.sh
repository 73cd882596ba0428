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

# meet <name>: waits for the other guest at the barrier <name>; a failure (the peer stopped, or
# waits elsewhere) is a failed check, so that it shows in the report.
meet() {
	_answer=$(barrier "$1") || ktap_result 1 "barrier $1: meet the other VM" "$_answer"
}

# vm_pair <tag> <server-vm> <port> <done-regex> <name> <tool> <args...>: VM <server-vm> runs
# <tool> <args> as the server, the other VM as the client against the server's address (the tools
# exchange their QP numbers, LIDs and GIDs over TCP <port>). The server meets the client at the
# barrier <tag>-listen once its port listens (or after 30 s without); the client starts then.
# Each side must exit 0 within its timeout and print a line matching <done-regex>, and reports
# its own result; its result lines are logged.
vm_pair() {
	_tag=$1
	_server_vm=$2
	_port=$3
	_done=$4
	_name=$5
	_tool=$6
	shift 6
	if [ "$VM_INDEX" = "$_server_vm" ]; then
		_side=server
		_limit=75
		timeout $_limit $_tool "$@" >/tmp/pp 2>&1 &
		_pid=$!
		wait_listening "$_port" 30 && _listen="listening on port $_port" ||
			_listen="not listening on port $_port after 30 s"
		_b=$(barrier "$_tag-listen")
		wait $_pid
		_rc=$?
	else
		_side=client
		_limit=60
		_listen=""
		_b=$(barrier "$_tag-listen")
		timeout $_limit $_tool "$@" "$PEER_IP" >/tmp/pp 2>&1
		_rc=$?
	fi
	case $_rc in
	0) _how="exit 0" ;;
	124 | 143) _how="killed after the ${_limit} s timeout (exit $_rc)" ;;
	*) _how="exit $_rc" ;;
	esac
	_out="$_side $_how${_listen:+; $_listen}; barrier: $_b
$(cat /tmp/pp)"
	[ $_rc = 0 ] && grep -Eq "$_done" /tmp/pp
	ktap_result $? "$_side: $_name" "$_out"
	grep -E "$_done" /tmp/pp | sed 's/^/# /'
}
