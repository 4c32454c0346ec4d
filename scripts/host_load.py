"""What else the host did while a benchmark ran: the CPU time the hypervisor took (steal) and the
CPU time of processes other than the benchmark's own children, from /proc/stat and getrusage.
A latency tail that comes with steal or with other load is the host's, not the service's."""
import os, resource, time

_HZ = os.sysconf("SC_CLK_TCK")


def _proc_stat():
    """(busy, steal, total) ticks of all CPUs since boot; busy counts user, nice, system, irq and
    softirq (guest time is inside user)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    fields += [0] * (8 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + idle + iowait + steal


def busy_cpu_s():
    """CPU seconds all CPUs spent busy since boot (for what a program whose processes it does not
    wait for, such as BruteFIR's filter processes, kept busy: the difference over its run)."""
    return _proc_stat()[0] / _HZ


def _children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class HostLoad:
    """Snapshot at start(); stop() returns {"steal_pct", "other_cores", "own_cores"} over the
    interval: steal as a share of all CPU time, and the cores' worth of CPU used by processes
    other than the children waited for in between (own_cores: theirs). Children still running at
    stop() count as other load."""

    def start(self):
        self._t = time.monotonic()
        self._stat = _proc_stat()
        self._own = _children_cpu_s()
        return self

    def stop(self):
        wall = max(time.monotonic() - self._t, 1e-9)
        busy0, steal0, total0 = self._stat
        busy1, steal1, total1 = _proc_stat()
        own = _children_cpu_s() - self._own
        busy_s = (busy1 - busy0) / _HZ
        total = max(total1 - total0, 1)
        return {"steal_pct": round(100.0 * (steal1 - steal0) / total, 2),
                "other_cores": round(max(busy_s - own, 0.0) / wall, 2),
                "own_cores": round(own / wall, 2)}
