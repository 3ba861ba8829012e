"""Assertions on one `helm template` output of deploy/helm/sluice (run by scripts/test-chart).

Usage: test_chart_asserts.py CHART_DIR VALUES_FILE OUT_DIR

Reads OUT_DIR/rendered.yaml; writes OUT_DIR/sluice.yaml (the config the Secret holds,
for `sluice check-config`) and OUT_DIR/servicemonitor-N.json (for the CRD check).
The expected values are computed here, independently of the templates, from the
chart's values.yaml merged with VALUES_FILE and from the rendered config.
"""

import base64
import json
import math
import re
import sys

import yaml

UNITS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def seconds(text):
    """A sluice duration in whole seconds, rounded up."""
    m = re.fullmatch(r"(\d+)(us|µs|ms|s|m|h)", str(text).strip())
    assert m, f"not a sluice duration: {text!r}"
    return math.ceil(int(m.group(1)) * UNITS[m.group(2)])


def merge(base, over):
    """Helm's merge of a values file over the chart's values (null deletes)."""
    out = dict(base)
    for k, v in (over or {}).items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def main(chart, values_file, out):
    values = merge(yaml.safe_load(open(f"{chart}/values.yaml")), yaml.safe_load(open(values_file)))
    docs = [d for d in yaml.safe_load_all(open(f"{out}/rendered.yaml")) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)

    def one(kind):
        check(len(by_kind.get(kind, [])) == 1, f"expected one {kind}, got {len(by_kind.get(kind, []))}")
        return by_kind[kind][0]

    dep = one("Deployment")
    svc = one("Service")
    pod = dep["spec"]["template"]["spec"]
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    selector = dep["spec"]["selector"]["matchLabels"]
    check(all(pod_labels.get(k) == v for k, v in selector.items()), "the Deployment's selector misses its pods")
    (container,) = pod["containers"]

    # The configuration: rendered into a Secret, or an existing one.
    existing = values.get("existingSecret")
    volumes = {v["name"]: v for v in pod["volumes"]}
    secret_name = volumes["config"]["secret"]["secretName"]
    if existing:
        check("Secret" not in by_kind, "a Secret was rendered although existingSecret is set")
        check(secret_name == existing, f"config volume uses {secret_name}, not {existing}")
        config = values["config"]
    else:
        secret = one("Secret")
        check(secret["metadata"]["name"] == secret_name, "the config volume does not use the rendered Secret")
        check(set(secret["data"]) == {"sluice.yaml"}, f"Secret keys {sorted(secret['data'])}")
        text = base64.b64decode(secret["data"]["sluice.yaml"]).decode()
        config = yaml.safe_load(text)
        check(config == values["config"], "the Secret's sluice.yaml is not values.config verbatim")
        with open(f"{out}/sluice.yaml", "w") as f:
            f.write(text)

    # Mounted as a directory; no subPath anywhere (subPath mounts are never updated).
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    check(mounts["config"]["mountPath"] == values["configDir"], "config not mounted at configDir")
    check(mounts["config"].get("readOnly") is True, "config mount is writable")
    check(all("subPath" not in m and "subPathExpr" not in m for m in container["volumeMounts"]), "a mount uses subPath")
    check(container["args"] == ["serve", "--config", f"{values['configDir']}/sluice.yaml"], f"args {container['args']}")

    # Grace period: preStop sleep + drain_delay + shutdown_timeout + 5, from the config itself.
    limits = config.get("limits") or {}
    pre_stop = values["preStopSleepSeconds"]
    want_grace = pre_stop + seconds(limits.get("drain_delay", "0s")) + seconds(limits.get("shutdown_timeout", "30s")) + 5
    check(pod["terminationGracePeriodSeconds"] == want_grace,
          f"terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']}, want {want_grace}")
    check(container["lifecycle"]["preStop"] == {"sleep": {"seconds": pre_stop}}, f"preStop {container['lifecycle']}")

    # Probes on the admin port.
    for probe, path in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")]:
        check(container[probe]["httpGet"] == {"path": path, "port": "admin"}, f"{probe}: {container[probe]}")

    # Ports follow the config's listen addresses; the Service exposes both by name.
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    check(ports == {"mysql": int(config["listen"].rsplit(":", 1)[1]), "admin": int(config["admin_listen"].rsplit(":", 1)[1])},
          f"container ports {ports} vs config {config['listen']} {config['admin_listen']}")
    svc_ports = {p["name"]: (p["port"], p["targetPort"]) for p in svc["spec"]["ports"]}
    check(svc_ports == {"mysql": (ports["mysql"], "mysql"), "admin": (ports["admin"], "admin")}, f"Service ports {svc_ports}")
    check(svc["spec"]["selector"] == selector, "the Service's selector is not the pods'")

    # Non-root, read-only root, an emptyDir as TMPDIR.
    check(pod["securityContext"]["runAsNonRoot"] is True, "runAsNonRoot")
    check(pod["securityContext"]["runAsUser"] != 0, "runs as root")
    check(container["securityContext"]["readOnlyRootFilesystem"] is True, "readOnlyRootFilesystem")
    check(container["securityContext"]["allowPrivilegeEscalation"] is False, "allowPrivilegeEscalation")
    check("emptyDir" in volumes["tmp"] and mounts["tmp"]["mountPath"] == "/tmp", "no emptyDir at /tmp")
    check({"name": "TMPDIR", "value": "/tmp"} in container["env"], "TMPDIR is not the emptyDir")

    # Integer CPU limits.
    cpu = str(container["resources"]["limits"]["cpu"])
    check(re.fullmatch(r"[1-9]\d*|[1-9]\d*000m", cpu) is not None, f"CPU limit {cpu} is not whole CPUs")

    # Anti-affinity and zone spread select exactly these pods.
    anti = values["podAntiAffinity"]
    aff = pod.get("affinity", {}).get("podAntiAffinity", {})
    if anti == "soft":
        (term,) = aff["preferredDuringSchedulingIgnoredDuringExecution"]
        term = term["podAffinityTerm"]
    else:
        (term,) = aff["requiredDuringSchedulingIgnoredDuringExecution"]
    check(term["topologyKey"] == "kubernetes.io/hostname", "anti-affinity is not per node")
    check(term["labelSelector"]["matchLabels"] == selector, "anti-affinity selects other pods")
    if values["topologySpread"]["enabled"]:
        (spread,) = pod["topologySpreadConstraints"]
        check(spread["topologyKey"] == "topology.kubernetes.io/zone", "no zone spread")
        check(spread["whenUnsatisfiable"] == "ScheduleAnyway", "the zone spread is not soft")
        check(spread["labelSelector"]["matchLabels"] == selector, "the spread selects other pods")
    else:
        check("topologySpreadConstraints" not in pod, "a spread although disabled")

    # Replicas, or an HPA that owns them.
    hpa = by_kind.get("HorizontalPodAutoscaler", [])
    if values["autoscaling"]["enabled"]:
        check("replicas" not in dep["spec"], "replicas set although the HPA owns them")
        (h,) = hpa
        check(h["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": dep["metadata"]["name"]},
              "the HPA does not scale the Deployment")
        check(h["spec"]["minReplicas"] == values["autoscaling"]["minReplicas"], "HPA minReplicas")
    else:
        check(not hpa, "an HPA although disabled")
        check(dep["spec"]["replicas"] == values["replicaCount"], f"replicas {dep['spec'].get('replicas')}")

    pdb = by_kind.get("PodDisruptionBudget", [])
    if values["podDisruptionBudget"]["enabled"]:
        (p,) = pdb
        check(p["spec"]["selector"]["matchLabels"] == selector, "the PDB's selector is not the pods'")
        check(p["spec"]["maxUnavailable"] == values["podDisruptionBudget"]["maxUnavailable"], "PDB maxUnavailable")
    else:
        check(not pdb, "a PDB although disabled")

    # The checksum annotation only when asked for (and only for a rendered config).
    annotations = dep["spec"]["template"]["metadata"].get("annotations") or {}
    want_checksum = bool(values["restartOnConfigChange"]) and not existing
    check(("checksum/config" in annotations) == want_checksum, f"checksum/config present: {not want_checksum}")

    sms = by_kind.get("ServiceMonitor", [])
    if values["serviceMonitor"]["enabled"]:
        (sm,) = sms
        check(sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(),
              "the ServiceMonitor does not select the Service")
        check(sm["spec"]["endpoints"][0]["port"] == "admin", "the ServiceMonitor scrapes another port")
        check(sm["spec"]["endpoints"][0]["path"] == "/metrics", "the ServiceMonitor scrapes another path")
        for i, s in enumerate(sms):
            with open(f"{out}/servicemonitor-{i}.json", "w") as f:
                json.dump(s, f)
    else:
        check(not sms, "a ServiceMonitor although disabled")

    print(f"test-chart: [{out.rsplit('/', 1)[-1]}] assertions: ok (grace period {want_grace} s, "
          f"{len(docs)} objects: {', '.join(sorted(by_kind))})")


if __name__ == "__main__":
    try:
        main(*sys.argv[1:4])
    except AssertionError as e:
        print(f"test-chart: assertion failed: {e}", file=sys.stderr)
        sys.exit(1)
