# zz-dbg: temporary
# stacks: rust c
# guest-python: yes
# timeout: 400
check "load the stack" load_stack
wait_for "uverbs0 is there" 30 uverbs0 ls /dev/infiniband
mkdir -p /dev/shm; mount -t tmpfs shm /dev/shm 2>/dev/null
cat > /tmp/dbg.py <<'PY'
import sys, os, random, unittest
T='/usr/share/doc/rdma-core/tests'
sys.path.insert(0, T)
sys.argv = [os.path.join(T, "run_tests.py"), "--dev", "mlx5_0"]
from args_parser import parser
from importlib.machinery import SourceFileLoader
tests = SourceFileLoader("tests", os.path.join(T, "__init__.py")).load_module()
parser.parse_args()
import tests.utils as u
orig = u.random_qp_init_attr_ex
def wrap(*a, **k):
    q = orig(*a, **k)
    print('  attr: mask', q.comp_mask, 'flags', q.create_flags, 'cap', q.cap.max_send_wr, q.cap.max_recv_wr, q.cap.max_send_sge, q.cap.max_recv_sge, q.cap.max_inline_data, 'sig', q.sq_sig_all)
    return q
u.random_qp_init_attr_ex = wrap
from tests.test_qp import QPTest
for seed in range(40):
    for name in ('test_create_ud_qp_ex_no_attr', 'test_create_ud_qp_ex_with_attr'):
        random.seed(f"s{seed}")
        r = unittest.TestResult()
        QPTest(name).run(r)
        o = 'fail' if r.failures else 'error' if r.errors else 'skip' if r.skipped else 'pass'
        why = (r.failures or r.errors or r.skipped or [(0, '')])[0][1]
        print('SEED', seed, name, o, str(why).strip().splitlines()[-1][:150] if why else '')
PY
python3 /tmp/dbg.py 2>&1 | sed 's/^/DBG /'
check "done" true
