"""deploy/: the KubeRay manifests, the image recipe and the monitoring rules, checked offline.

Every kustomization is rendered with the real ``kubectl kustomize``; every rendered object is
validated strictly against the real CRD schema it claims (KubeRay RayJob / RayCluster,
prometheus-operator PodMonitor / PrometheusRule, copies in ../shared/data/deploy-schemas),
after applying the CRD's defaults as the API server does. Strictly means what
``kubectl apply --validate=strict`` means for a structural schema: a field the schema does
not declare is an error, unless the schema preserves unknown fields there.

What the API server checks but this does not: CEL rules (``x-kubernetes-validations``); a
test asserts that no field of the manifests is under such a rule, so nothing goes unchecked.

Beyond the schema, the rules the KubeRay operator enforces when it reconciles (from
ray-operator/controllers/ray/utils/validation.go and its constants):
- RayCluster name: a DNS-1035 label of at most 53 characters (63 minus "-serve-svc", the
  longest Service suffix KubeRay appends); RayJob name: at most 47 (53 minus the 6 characters
  of "-xxxxx" KubeRay appends to name the RayJob's cluster);
- every group has a container; worker groups: minReplicas, maxReplicas >= 0, min <= max (both
  required without autoscaling); no `labels` in rayStartParams; rayStartParams resources
  (num-cpus, num-gpus, memory, resources) and the group's `resources` field not both;
  autoscalerOptions.idleTimeoutSeconds >= 0; autoscaler v2: restartPolicy Never or unset;
- RayJob: submissionMode one of K8sJobMode, HTTPMode, InteractiveMode, SidecarMode (the modes
  the controller implements; the CRD does not enumerate them); one of
  rayClusterSpec or clusterSelector; a TTL or suspend needs shutdownAfterJobFinishes;
  backoffLimit >= 0 (and 0 in InteractiveMode); activeDeadlineSeconds > 0; runtimeEnvYAML
  parses; the embedded cluster spec passes the RayCluster rules.
And raycorpus's own conventions: `replicas` within [min, max] (the operator silently clamps
it), the head advertises 0 CPUs, autoscaling on, every container's requests equal its
limits, a RayJob entrypoint, `shutdownAfterJobFinishes` only with its own rayClusterSpec, and
no credential in a manifest (S3 keys come from the `raycorpus-s3` Secret through envFrom).
"""

from __future__ import annotations

import copy
import functools
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from raycorpus.config import config_from_dict
from raycorpus.runtime.metrics import BY_NAME, exported_names
from tests.support.paths import REPO, SHARED, need_shared
from tests.support.promql import promtool as find_promtool
from tests.support.promql import selectors

DEPLOY = REPO / "deploy"
SCHEMAS = SHARED / "data" / "deploy-schemas"
KUSTOMIZATIONS = ["base", "overlays/small", "overlays/large"]
CRD_FILES = (
    "kuberay-crds/ray.io_rayclusters.yaml",
    "kuberay-crds/ray.io_rayjobs.yaml",
    "kuberay-crds/ray.io_rayservices.yaml",
    "prometheus-operator-crds/monitoring.coreos.com_podmonitors.yaml",
    "prometheus-operator-crds/monitoring.coreos.com_prometheusrules.yaml",
)
S3_SECRET = "raycorpus-s3"  # created by `kubectl create secret` (deploy/README.md), never in the repo
SUBMISSION_MODES = {"K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"}
MAX_RAYCLUSTER_NAME = 53
MAX_RAYJOB_NAME = MAX_RAYCLUSTER_NAME - 6
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
CREDENTIAL_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|ACCESS_KEY|CREDENTIAL", re.I)
ObjectMeta = {  # what the API server accepts in a manifest's metadata (the CRDs only say `type: object`)
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


# ----------------------------------------------------------------------------- rendering


def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("kubectl not installed: it renders the kustomizations (kubectl kustomize)")
    return path


@functools.cache
def _render(kustomization: str) -> tuple[dict, ...]:
    out = subprocess.run([kubectl(), "kustomize", str(DEPLOY / kustomization)], capture_output=True, text=True)
    assert out.returncode == 0, f"kubectl kustomize deploy/{kustomization}: {out.stderr}"
    return tuple(d for d in yaml.safe_load_all(out.stdout) if d)


def render(kustomization: str) -> list[dict]:
    """The objects `kubectl kustomize deploy/<kustomization>` renders (a fresh copy to change)."""
    return copy.deepcopy(list(_render(kustomization)))


def only(objs: list[dict], kind: str) -> dict:
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


# ----------------------------------------------------------------------------- CRD schemas


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> openAPIV3Schema of every served version of the CRDs in ../shared."""
    need_shared(SCHEMAS)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    schemas = {}
    for name in CRD_FILES:
        crd = yaml.load((SCHEMAS / name).read_text(), Loader=loader)
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


def strict_schema(node: Any) -> Any:
    """A structural (Kubernetes) schema as a JSON Schema that rejects undeclared fields."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("description", "default", "nullable", "format") or key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {name: strict_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = strict_schema(value)
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = [strict_schema(sub) for sub in value]
        elif key == "pattern" and "(?i)" in value[1:]:  # Go (RE2) allows a flag mid-pattern, Python only first
            out[key] = "(?i)" + value.replace("(?i)", "")
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False  # a field the schema does not declare is unknown
    if node.get("nullable"):
        out = {"anyOf": [{"type": "null"}, out]}
    return out


@functools.cache
def validator(api_version: str, kind: str):
    from jsonschema import Draft7Validator

    schema = strict_schema(crd_schemas()[(api_version, kind)])
    schema["properties"]["metadata"] = ObjectMeta
    schema["properties"]["apiVersion"] = {"const": api_version}
    schema["properties"]["kind"] = {"const": kind}
    schema["required"] = sorted({"apiVersion", "kind", "metadata", *schema.get("required", ())})
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


def apply_defaults(value: Any, node: dict) -> None:
    """Fill in the schema's `default`s where a field is absent, as the API server does on create."""
    if isinstance(value, dict):
        props = node.get("properties", {})
        for name, sub in props.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
        extra = node.get("additionalProperties")
        for name, item in value.items():
            if name in props:
                apply_defaults(item, props[name])
            elif isinstance(extra, dict):
                apply_defaults(item, extra)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value:
            apply_defaults(item, node["items"])


def cel_ruled_fields(value: Any, node: dict, path: str = "") -> list[str]:
    """Fields of ``value`` under a CEL rule (x-kubernetes-validations), which this file cannot evaluate."""
    found = [path or "/"] if node.get("x-kubernetes-validations") else []
    if isinstance(value, dict):
        props, extra = node.get("properties", {}), node.get("additionalProperties")
        for name, item in value.items():
            sub = props.get(name, extra if isinstance(extra, dict) else None)
            if sub is not None:
                found += cel_ruled_fields(item, sub, f"{path}/{name}")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            found += cel_ruled_fields(item, node["items"], f"{path}/{i}")
    return found


def defaulted(obj: dict) -> dict:
    out = copy.deepcopy(obj)
    apply_defaults(out, crd_schemas()[(obj["apiVersion"], obj["kind"])])
    return out


def schema_errors(obj: dict) -> list[str]:
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in crd_schemas():
        return [f"no CRD for {key}"]
    errors = validator(*key).iter_errors(defaulted(obj))
    return [f"{'/'.join(map(str, e.absolute_path)) or '/'}: {e.message}" for e in errors]


# ----------------------------------------------------------------------------- rules beyond the schema


def metadata_errors(obj: dict) -> list[str]:
    meta = obj.get("metadata", {})
    name = meta.get("name", "")
    errors = []
    if len(name) > 253 or not DNS1123_SUBDOMAIN.fullmatch(name):
        errors.append(f"metadata.name {name!r} is not a DNS-1123 subdomain")
    for key, value in meta.get("labels", {}).items():
        if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
            errors.append(f"label {key}={value!r} is not a valid label value")
    return errors


def pod_specs(obj: dict) -> list[tuple[str, dict]]:
    """(group, pod spec) of every pod template in a RayCluster, RayJob (its cluster) or RayService."""
    spec = obj.get("spec", {})
    cluster = {"RayJob": spec.get("rayClusterSpec"), "RayService": spec.get("rayClusterConfig"),
               "RayCluster": spec}.get(obj["kind"])
    if not cluster:
        return []
    groups = [("head", cluster.get("headGroupSpec", {}))]
    groups += [(g.get("groupName", "?"), g) for g in cluster.get("workerGroupSpecs", [])]
    return [(name, g.get("template", {}).get("spec", {})) for name, g in groups]


def containers(pod: dict) -> list[dict]:
    return pod.get("initContainers", []) + pod.get("containers", [])


def credential_errors(obj: dict) -> list[str]:
    """S3 keys come from the Secret through envFrom, never as a value in a manifest."""
    errors = []
    if obj["kind"] == "Secret":
        errors.append(f"Secret {obj['metadata']['name']} is in the manifests: create it with kubectl instead")
    for group, pod in pod_specs(obj):
        for c in containers(pod):
            for env in c.get("env", []):
                if CREDENTIAL_NAME.search(env.get("name", "")) and "value" in env:
                    errors.append(f"{group}/{c['name']}: {env['name']} is inline (use the {S3_SECRET} Secret)")
    return errors


def _groups(spec: dict) -> list[tuple[str, dict]]:
    return [("head", spec.get("headGroupSpec", {})),
            *((g.get("groupName", "?"), g) for g in spec.get("workerGroupSpecs", []))]


def kuberay_cluster_errors(name: str, spec: dict, max_name: int = MAX_RAYCLUSTER_NAME) -> list[str]:
    """What the KubeRay operator refuses in a RayCluster (or a RayJob's cluster) beyond the schema."""
    errors = []
    if len(name) > max_name or not DNS1035_LABEL.fullmatch(name):
        errors.append(f"name {name!r}: must be a DNS-1035 label of at most {max_name} characters")
    autoscaling = bool(spec.get("enableInTreeAutoscaling"))
    options = spec.get("autoscalerOptions") or {}
    if options.get("idleTimeoutSeconds", 0) < 0:
        errors.append("autoscalerOptions.idleTimeoutSeconds must be >= 0")
    v2 = autoscaling and options.get("version") == "v2"
    for group, g in _groups(spec):
        pod = g.get("template", {}).get("spec", {})
        if not pod.get("containers"):
            errors.append(f"{group}: no container")
        start = g.get("rayStartParams", {})
        if "labels" in start:
            errors.append(f"{group}: rayStartParams labels is not supported (use the group's labels)")
        if g.get("resources") and any(start.get(k) for k in ("num-cpus", "num-gpus", "memory", "resources")):
            errors.append(f"{group}: resources set both in rayStartParams and the group's resources")
        if v2 and pod.get("restartPolicy", "Never") != "Never":
            errors.append(f"{group}: restartPolicy must be Never or unset with autoscaler v2")
        if group == "head":
            continue
        low, high = g.get("minReplicas"), g.get("maxReplicas")
        if not autoscaling and (low is None or high is None):
            errors.append(f"{group}: minReplicas and maxReplicas are required without autoscaling")
        for field, n in (("minReplicas", low), ("maxReplicas", high)):
            if n is not None and n < 0:
                errors.append(f"{group}: negative {field} {n}")
        if low is not None and high is not None and low > high:
            errors.append(f"{group}: minReplicas {low} greater than maxReplicas {high}")
    return errors


def raycorpus_cluster_errors(spec: dict) -> list[str]:
    """raycorpus's conventions for its clusters (stricter than KubeRay)."""
    errors = []
    if not spec.get("enableInTreeAutoscaling"):
        errors.append("enableInTreeAutoscaling must be true (raycorpus sizes its pool from the cluster)")
    head_cpus = spec.get("headGroupSpec", {}).get("rayStartParams", {}).get("num-cpus")
    if head_cpus != "0":
        errors.append(f"head rayStartParams num-cpus must be \"0\", got {head_cpus!r}")
    for group, g in _groups(spec):
        for c in containers(g.get("template", {}).get("spec", {})):
            res = c.get("resources", {})
            if not res.get("limits") or res.get("requests") != res.get("limits"):
                errors.append(f"{group}/{c['name']}: resources requests must equal limits (and be set)")
        low, high, replicas = g.get("minReplicas"), g.get("maxReplicas"), g.get("replicas")
        if group != "head" and replicas is not None and not (low or 0) <= replicas <= (high or replicas):
            errors.append(f"{group}: replicas {replicas} outside [minReplicas, maxReplicas]")
    return errors


def kuberay_job_errors(obj: dict) -> list[str]:
    """What the KubeRay operator refuses in a RayJob beyond the schema (its cluster included)."""
    name, spec = obj["metadata"]["name"], obj.get("spec", {})
    errors = []
    if len(name) > MAX_RAYJOB_NAME or not DNS1035_LABEL.fullmatch(name):
        errors.append(f"RayJob name {name!r}: must be a DNS-1035 label of at most {MAX_RAYJOB_NAME} characters")
    mode = spec.get("submissionMode", "K8sJobMode")
    if mode not in SUBMISSION_MODES:
        errors.append(f"submissionMode {mode!r} is not one of {sorted(SUBMISSION_MODES)}")
    cluster, selector = spec.get("rayClusterSpec"), spec.get("clusterSelector")
    if not cluster and not selector:
        errors.append("one of rayClusterSpec or clusterSelector must be set")
    if not spec.get("shutdownAfterJobFinishes"):
        if spec.get("ttlSecondsAfterFinished", 0) > 0:
            errors.append("ttlSecondsAfterFinished needs shutdownAfterJobFinishes")
        if spec.get("suspend"):
            errors.append("suspend needs shutdownAfterJobFinishes")
    if spec.get("ttlSecondsAfterFinished", 0) < 0:
        errors.append("ttlSecondsAfterFinished must be >= 0")
    backoff = spec.get("backoffLimit")
    if backoff is not None and (backoff < 0 or (mode == "InteractiveMode" and backoff > 0)):
        errors.append(f"backoffLimit {backoff} is invalid (>= 0, and 0 in InteractiveMode)")
    if spec.get("activeDeadlineSeconds") is not None and spec["activeDeadlineSeconds"] <= 0:
        errors.append("activeDeadlineSeconds must be > 0")
    try:
        yaml.safe_load(spec.get("runtimeEnvYAML") or "")
    except yaml.YAMLError as e:
        errors.append(f"runtimeEnvYAML does not parse: {e}")
    if cluster:
        errors += [f"rayClusterSpec: {e}" for e in kuberay_cluster_errors(name, cluster, MAX_RAYJOB_NAME)]
    return errors


def raycorpus_job_errors(obj: dict) -> list[str]:
    spec = obj.get("spec", {})
    errors = []
    if spec.get("submissionMode") != "InteractiveMode" and not spec.get("entrypoint", "").strip():
        errors.append("entrypoint is empty")
    if spec.get("shutdownAfterJobFinishes") and not spec.get("rayClusterSpec"):
        errors.append("shutdownAfterJobFinishes needs rayClusterSpec (a cluster of the job's own)")
    if spec.get("rayClusterSpec"):
        errors += [f"rayClusterSpec: {e}" for e in raycorpus_cluster_errors(spec["rayClusterSpec"])]
    return errors


def manifest_errors(obj: dict) -> list[str]:
    """Everything wrong with one rendered object, as the API server and the operators would see it."""
    errors = metadata_errors(obj) + credential_errors(obj)
    kind = obj.get("kind")
    if kind in ("ConfigMap", "Secret"):
        if obj.get("apiVersion") != "v1":
            errors.append(f"{kind} apiVersion must be v1")
        if not all(isinstance(v, str) for v in (obj.get("data") or {}).values()):
            errors.append(f"{kind} data values must be strings")
        return errors
    errors += schema_errors(obj)
    if kind == "RayJob":
        errors += kuberay_job_errors(obj) + raycorpus_job_errors(obj)
        cluster = obj.get("spec", {}).get("rayClusterSpec")
        if cluster:  # the RayCluster KubeRay creates for the job: named `<job>-<5 characters>`
            made = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
                    "metadata": {"name": obj["metadata"]["name"] + "-x7k2p"}, "spec": cluster}
            errors += [f"its RayCluster: {e}" for e in schema_errors(made)]
    elif kind == "RayCluster":
        errors += kuberay_cluster_errors(obj["metadata"]["name"], obj["spec"]) + raycorpus_cluster_errors(obj["spec"])
    return errors


# ----------------------------------------------------------------------------- the rendered builds


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_build_renders_and_validates_strictly(kustomization):
    objs = render(kustomization)
    assert sorted(o["kind"] for o in objs) == ["ConfigMap", "ConfigMap", "RayJob"]
    for obj in objs:
        assert manifest_errors(obj) == [], f"{obj['kind']} {obj['metadata']['name']}"
    job = only(objs, "RayJob")
    schema = crd_schemas()[("ray.io/v1", "RayJob")]
    assert cel_ruled_fields(defaulted(job), schema) == []  # nothing the API server would check that we cannot
    spec = job["spec"]
    assert spec["submissionMode"] == "K8sJobMode" and spec["shutdownAfterJobFinishes"] is True
    assert spec["backoffLimit"] >= 1 and spec["ttlSecondsAfterFinished"] > 0
    assert spec["entrypoint"].split()[:2] == ["raycorpus", "run"]
    autoscaler = spec["rayClusterSpec"]["autoscalerOptions"]
    assert autoscaler["upscalingMode"] and autoscaler["idleTimeoutSeconds"] > 0


def test_crd_defaults_are_applied():
    need_shared(SCHEMAS)
    job = only(render("base"), "RayJob")
    del job["spec"]["submissionMode"]
    del job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"]
    filled = defaulted(job)
    assert filled["spec"]["submissionMode"] == "K8sJobMode"  # the CRD's defaults
    assert filled["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] == 0
    assert filled["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["numOfHosts"] == 1


def _config_map(objs: list[dict], name: str) -> dict:
    return only([o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name], "ConfigMap")


def _build_yaml(objs: list[dict]) -> dict:
    """The build config the RayJob's head mounts (the ConfigMap generated from build.yaml)."""
    head = pod_specs(only(objs, "RayJob"))[0][1]
    volume = next(v for v in head["volumes"] if "configMap" in v)
    return yaml.safe_load(_config_map(objs, volume["configMap"]["name"])["data"]["build.yaml"])


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_build_references_resolve(kustomization):
    """Generated (hash-suffixed) ConfigMap names reach the RayJob; the config is where the entrypoint reads it."""
    objs = render(kustomization)
    job = only(objs, "RayJob")
    for group, pod in pod_specs(job):
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for v in volumes.values():
            if "configMap" in v:
                _config_map(objs, v["configMap"]["name"])
        for c in containers(pod):
            refs = c.get("envFrom", [])
            assert {r["secretRef"]["name"] for r in refs if "secretRef" in r} == {S3_SECRET}, f"{group}/{c['name']}"
            for r in refs:
                if "configMapRef" in r:
                    _config_map(objs, r["configMapRef"]["name"])
            for mount in c.get("volumeMounts", []):
                assert mount["name"] in volumes, f"{group}/{c['name']} mounts a volume the pod lacks"
    head = pod_specs(job)[0][1]
    config_path = Path(job["spec"]["entrypoint"].split()[2])
    mount = next(m for m in head["containers"][0]["volumeMounts"] if Path(m["mountPath"]) == config_path.parent)
    volume = next(v for v in head["volumes"] if v["name"] == mount["name"])
    assert config_path.name in _config_map(objs, volume["configMap"]["name"])["data"]


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_build_config_is_valid_and_fits_the_cluster(kustomization):
    """The ConfigMap's build.yaml is a valid raycorpus config whose pool the autoscaler can reach and hold."""
    objs = render(kustomization)
    job = only(objs, "RayJob")
    cfg = config_from_dict(_build_yaml(objs), source=f"deploy/{kustomization}/build.yaml")
    assert cfg.output.path.startswith("s3://"), "pods have no persistent disk: the output goes to S3"
    for group, pod in pod_specs(job):  # tokenizer actors may run on any node
        mounts = {m["mountPath"] for m in pod["containers"][0].get("volumeMounts", [])}
        assert str(Path(cfg.tokenizer.path).parent) in mounts, group
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    cpus = int(group["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"])
    assert cfg.ray.workers == group["maxReplicas"] * cpus // cfg.ray.worker_cpus


def test_overlays_size_the_build():
    sizes = {}
    for k in KUSTOMIZATIONS:
        objs = render(k)
        job, build = only(objs, "RayJob"), _build_yaml(objs)
        group = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
        sizes[k] = {"job": job["metadata"]["name"], "output": build["output"]["path"],
                    "max_pods": group["maxReplicas"],
                    "pod_cpus": int(group["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"]),
                    "workers": build["ray"]["workers"], "shard_tokens": build["output"]["shard_size_tokens"]}
    assert len({s["job"] for s in sizes.values()}) == 3, "each build is its own RayJob"
    assert len({s["output"] for s in sizes.values()}) == 3, "each build writes its own output"
    small, large = sizes["overlays/small"], sizes["overlays/large"]
    for key in ("max_pods", "pod_cpus", "workers", "shard_tokens"):
        assert small[key] < large[key], key


# ----------------------------------------------------------------------------- broken manifests


def _job() -> dict:
    return only(render("base"), "RayJob")


def _cluster(job: dict) -> dict:
    return job["spec"]["rayClusterSpec"]


def _unknown_field(job):
    _cluster(job)["headGroupSpec"]["numCpus"] = 0


def _container_typo(job):
    c = _cluster(job)["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    c["resource"] = c.pop("resources")


def _min_over_max(job):
    _cluster(job)["workerGroupSpecs"][0].update(minReplicas=8, maxReplicas=2, replicas=2)


def _bad_mode(job):
    job["spec"]["submissionMode"] = "BatchMode"


def _long_name(job):
    job["metadata"]["name"] = "raycorpus-build-" + "x" * 32


def _bad_quantity(job):
    _cluster(job)["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "32GB"


def _inline_secret(job):
    c = _cluster(job)["headGroupSpec"]["template"]["spec"]["containers"][0]
    c["env"] = [{"name": "AWS_SECRET_ACCESS_KEY", "value": "hunter2"}]


def _head_cpus(job):
    _cluster(job)["headGroupSpec"]["rayStartParams"]["num-cpus"] = "4"


def _no_entrypoint(job):
    del job["spec"]["entrypoint"]


def _bad_upscaling(job):
    _cluster(job)["autoscalerOptions"]["upscalingMode"] = "Fast"


def _replicas_outside(job):
    _cluster(job)["workerGroupSpecs"][0]["replicas"] = 99


def _selector_with_shutdown(job):
    del job["spec"]["rayClusterSpec"]
    job["spec"]["clusterSelector"] = {"ray.io/cluster": "shared"}


@pytest.mark.parametrize(
    ("break_it", "expected"),
    [
        (_unknown_field, "Additional properties are not allowed ('numCpus'"),
        (_container_typo, "Additional properties are not allowed ('resource'"),
        (_min_over_max, "minReplicas 8 greater than maxReplicas 2"),
        (_bad_mode, "submissionMode 'BatchMode'"),
        (_long_name, "at most 47 characters"),
        (_bad_quantity, "does not match"),
        (_inline_secret, "AWS_SECRET_ACCESS_KEY is inline"),
        (_head_cpus, "num-cpus must be \"0\""),
        (_no_entrypoint, "entrypoint is empty"),
        (_bad_upscaling, "'Fast' is not one of"),
        (_replicas_outside, "replicas 99 outside"),
        (_selector_with_shutdown, "shutdownAfterJobFinishes needs rayClusterSpec"),
    ],
    ids=lambda v: v.__name__.strip("_") if callable(v) else None,
)
def test_broken_rayjob_is_rejected(break_it, expected):
    job = _job()
    assert manifest_errors(job) == []
    break_it(job)
    errors = manifest_errors(job)
    assert any(expected in e for e in errors), errors


def test_strictness_follows_the_schema():
    """Unknown fields are errors, except where the schema keeps them (a map, preserve-unknown-fields)."""
    need_shared(SCHEMAS)
    job = _job()
    _cluster(job)["headGroupSpec"]["rayStartParams"]["object-store-memory"] = "1000000000"  # a map of strings
    job["metadata"]["annotations"] = {"team": "data"}
    assert manifest_errors(job) == []
    job["metadata"]["uid"] = "set-by-the-server"
    assert any("'uid'" in e for e in manifest_errors(job))
    assert strict_schema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}) == {"type": "object"}
    assert strict_schema({"type": "string", "nullable": True}) == {"anyOf": [{"type": "null"}, {"type": "string"}]}
    int_or_string = strict_schema({"x-kubernetes-int-or-string": True})
    assert int_or_string == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    job["spec"]["managedBy"] = "ray.io/kuberay-operator"  # a field under a CEL rule is reported
    assert cel_ruled_fields(defaulted(job), crd_schemas()[("ray.io/v1", "RayJob")]) == ["/spec/managedBy"]


def test_kuberay_and_prometheus_operator_samples_pass():
    """The upstream samples pass the strict schemas and KubeRay's rules: no false alarms from strictness."""
    checked = 0
    for path in sorted(need_shared(SCHEMAS / "kuberay-samples").glob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if obj and obj["kind"] != "ConfigMap":
                errors = schema_errors(obj)
                if obj["kind"] == "RayJob":
                    errors += kuberay_job_errors(obj)
                elif obj["kind"] == "RayCluster":
                    errors += kuberay_cluster_errors(obj["metadata"]["name"], obj["spec"])
                assert errors == [], f"{path.name} {obj['kind']}"
                checked += 1
    assert checked == 8


# ----------------------------------------------------------------------------- monitoring


def _rules(objs: list[dict]) -> dict:
    return only(objs, "PrometheusRule")["spec"]


def test_monitoring_renders_and_validates_strictly():
    objs = render("monitoring")
    assert sorted(o["kind"] for o in objs) == ["PodMonitor", "PodMonitor", "PrometheusRule"]
    for obj in objs:
        assert manifest_errors(obj) == [], f"{obj['kind']} {obj['metadata']['name']}"


def test_pod_monitors_select_the_build_pods_and_their_ports():
    """The selectors match the labels the head / worker pods get (theirs + KubeRay's), the ports exist."""
    monitors = [o for o in render("monitoring") if o["kind"] == "PodMonitor"]
    job = only(render("base"), "RayJob")
    cluster = job["spec"]["rayClusterSpec"]
    pods = {"head": cluster["headGroupSpec"]["template"], "worker": cluster["workerGroupSpecs"][0]["template"]}
    selected = set()
    for monitor in monitors:
        wanted = monitor["spec"]["selector"]["matchLabels"]
        for node_type, template in pods.items():
            labels = {**template["metadata"]["labels"], "ray.io/node-type": node_type}  # KubeRay adds node-type
            if wanted.items() <= labels.items():
                selected.add(node_type)
                ports = {p["name"] for c in template["spec"]["containers"] for p in c.get("ports", [])}
                for endpoint in monitor["spec"]["podMetricsEndpoints"]:
                    assert endpoint["port"] in ports, f"{monitor['metadata']['name']}: no port {endpoint['port']}"
                    assert {"sourceLabels": ["__meta_kubernetes_pod_label_ray_io_cluster"],
                            "targetLabel": "ray_io_cluster", "action": "replace"} in endpoint["relabelings"]
    assert selected == {"head", "worker"}
    metrics_port = {p["containerPort"] for t in pods.values() for c in t["spec"]["containers"]
                    for p in c["ports"] if p["name"] == "metrics"}
    params = [cluster["headGroupSpec"]["rayStartParams"], cluster["workerGroupSpecs"][0]["rayStartParams"]]
    assert metrics_port == {int(p["metrics-export-port"]) for p in params} == {8080}


def _broken_pod_monitor(obj):
    obj["spec"]["podMetricsEndpoints"][0]["ports"] = obj["spec"]["podMetricsEndpoints"][0].pop("port")


def _broken_rule(obj):
    rule = obj["spec"]["groups"][0]["rules"][1]
    rule["expression"] = rule.pop("expr")


@pytest.mark.parametrize(("kind", "break_it"), [("PodMonitor", _broken_pod_monitor), ("PrometheusRule", _broken_rule)])
def test_broken_monitoring_is_rejected(kind, break_it):
    obj = next(o for o in render("monitoring") if o["kind"] == kind)
    break_it(obj)
    assert any("Additional properties are not allowed" in e for e in manifest_errors(obj))


def rule_series_errors(rules: list[dict]) -> list[str]:
    """Series a rule reads that raycorpus does not declare (nor a rule records), or labels they lack."""
    known = exported_names() | {r["record"] for r in rules if "record" in r}
    states = set(re.findall(r"\w+", BY_NAME["raycorpus_warcs"].help))  # the states the driver reports
    errors = []
    for rule in rules:
        name = rule.get("alert") or rule.get("record")
        found = selectors(rule["expr"])
        if not found:
            errors.append(f"{name}: reads no series")
        for s in found:
            if s.metric not in known:
                errors.append(f"{name}: {s.text} reads an undeclared series")
            if not set(s.labels) <= {"state", "output", "ray_io_cluster"}:
                errors.append(f"{name}: {s.text} matches a label the series lacks")
            state = re.fullmatch(r'state="(\w+)"', s.labels.get("state", 'state="total"'))
            if state is None or state.group(1) not in states:
                errors.append(f"{name}: {s.text}: not a WARC state the driver reports")
    return errors


def test_alerts_read_only_declared_metrics():
    pytest.importorskip("promql_parser", reason="promql-parser (PyPI) parses the rule expressions")
    rules = [r for g in _rules(render("monitoring"))["groups"] for r in g["rules"]]
    assert rule_series_errors(rules) == []
    alerts = {r["alert"]: r for r in rules if "alert" in r}
    assert set(alerts) == {"RaycorpusNoProgress", "RaycorpusWarcsFailing", "RaycorpusFailureFractionHigh",
                           "RaycorpusNoWorkers"}
    for alert in alerts.values():
        assert alert["labels"]["severity"] in {"warning", "critical"} and alert["annotations"]["summary"]
    assert "ray_raycorpus_workers" in {s.metric for s in selectors(alerts["RaycorpusNoWorkers"]["expr"])}
    for typo, expected in [('state="committed"', "not a WARC state"), ("ray_raycorpus_warcs", "undeclared series")]:
        broken = copy.deepcopy(rules)
        no_progress = next(r for r in broken if r.get("alert") == "RaycorpusNoProgress")
        no_progress["expr"] = no_progress["expr"].replace(typo, typo[:-3] + typo[-2:], 1)  # drop one letter
        assert any(expected in e for e in rule_series_errors(broken)), typo


def test_failure_alert_threshold_is_the_builds_failure_budget():
    rules = [r for g in _rules(render("monitoring"))["groups"] for r in g["rules"]]
    expr = next(r["expr"] for r in rules if r.get("alert") == "RaycorpusFailureFractionHigh")
    threshold = float(re.search(r">\s*([0-9.]+)\s*$", expr).group(1))
    for k in KUSTOMIZATIONS:
        assert config_from_dict(_build_yaml(render(k))).run.failure_budget == threshold, k


def promtool() -> str:
    path = find_promtool()
    if path is None:
        pytest.skip("promtool not installed (Debian: apt-get install prometheus)")
    return path


def _rules_dir(tmp_path: Path, spec: dict) -> Path:
    """A plain Prometheus rules file (the PrometheusRule's spec) beside a copy of the unit tests."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "raycorpus.rules.yaml").write_text(yaml.safe_dump(spec))
    shutil.copy(DEPLOY / "monitoring" / "tests.yaml", tmp_path / "tests.yaml")
    return tmp_path


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True)


def test_promtool_checks_and_unit_tests_pass(tmp_path):
    folder = _rules_dir(tmp_path, _rules(render("monitoring")))
    check = _promtool("check", "rules", "raycorpus.rules.yaml", cwd=folder)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 5 rules found" in check.stdout
    tests = _promtool("test", "rules", "tests.yaml", cwd=folder)
    assert tests.returncode == 0, tests.stdout + tests.stderr


def test_promtool_rejects_broken_rules(tmp_path):
    spec = _rules(render("monitoring"))
    bad = copy.deepcopy(spec)
    bad["groups"][0]["rules"][1]["expr"] = "max by (output) (ray_raycorpus_warcs{state=\"committed\"} offset)"
    check = _promtool("check", "rules", "raycorpus.rules.yaml", cwd=_rules_dir(tmp_path / "syntax", bad))
    assert check.returncode != 0 and "offset" in check.stdout + check.stderr
    changed = copy.deepcopy(spec)  # a valid rule that behaves differently: the unit tests notice
    no_progress = next(r for r in changed["groups"][0]["rules"] if r.get("alert") == "RaycorpusNoProgress")
    no_progress["expr"] = no_progress["expr"].replace("offset 15m", "offset 5m")
    folder = _rules_dir(tmp_path / "behaviour", changed)
    assert _promtool("check", "rules", "raycorpus.rules.yaml", cwd=folder).returncode == 0
    tests = _promtool("test", "rules", "tests.yaml", cwd=folder)
    assert tests.returncode != 0 and "RaycorpusNoProgress" in tests.stdout + tests.stderr


# ----------------------------------------------------------------------------- image and init container


def test_dockerfile_builds_this_package_with_the_clusters_ray():
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert lines[0] == "FROM python:3.11-slim"
    for line in lines:
        if line.startswith("COPY"):
            for source in line.split()[1:-1]:
                assert (REPO / source).exists(), f"COPY {source}: not in the repository"
    assert re.search(r"pip install [^\n]*/src ", text)
    ray_version = re.search(r"^ARG RAY_VERSION=(\S+)$", text, re.M).group(1)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    for k in KUSTOMIZATIONS:
        job = only(render(k), "RayJob")
        assert job["spec"]["rayClusterSpec"]["rayVersion"] == ray_version
        images = {c["image"] for _, pod in pod_specs(job) for c in containers(pod)}
        assert images == {f"raycorpus:{project}"}


def test_image_package_builds_from_what_the_dockerfile_copies(tmp_path):
    """The image's `pip install /src` sees only the COPYed paths: they must make the whole package."""
    root = tmp_path / "image"
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            *sources, dest = line.split()[1:]
            for source in sources:
                target = root / dest.lstrip("/")
                target = target / Path(source).name if dest.endswith("/") else target
                copy_it = shutil.copytree if (REPO / source).is_dir() else shutil.copy
                target.parent.mkdir(parents=True, exist_ok=True)
                copy_it(REPO / source, target)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                            "-w", str(tmp_path / "wheels"), str(root / "src")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheels").glob("raycorpus-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = next(z.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert {"raycorpus/cli/__init__.py", "raycorpus/runtime/driver.py", "raycorpus/ingest/storage.py"} <= names
    assert {f"raycorpus/data/{p.name}" for p in (REPO / "raycorpus" / "data").iterdir() if p.is_file()} <= names
    assert "raycorpus = raycorpus.cli:main" in entry_points


def test_tokenizer_init_container_fetches_from_s3(s3_server, tmp_path):
    """The init container's command, run as the pod runs it (envFrom: the env ConfigMap + the S3 Secret)."""
    objs = render("base")
    job = only(objs, "RayJob")
    head = pod_specs(job)[0][1]
    (init,) = head["initContainers"]
    bucket = s3_server.create_bucket("deploy-tokenizer")
    body = b'{"model": {"type": "BPE"}, "version": "1.0"}'
    s3_server.client().put_object(Bucket=bucket, Key="tokenizers/t.json", Body=body)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for ref in init["envFrom"]:
        if "configMapRef" in ref:
            env.update(_config_map(objs, ref["configMapRef"]["name"])["data"])
        else:  # the Secret documented in deploy/README.md: the S3 keys (and endpoint of a non-AWS store)
            env.update(s3_server.env())
    env["TOKENIZER_URL"] = f"s3://{bucket}/tokenizers/t.json"
    mount = next(m["mountPath"] for m in init["volumeMounts"])
    target = init["command"][-1]
    assert target.startswith(mount + "/")
    local_target = tmp_path / "tokenizer" / Path(target).relative_to(mount)
    command = [sys.executable, *init["command"][1:-1], str(local_target)]
    assert init["command"][0] == "python"
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert local_target.read_bytes() == body
    env["TOKENIZER_URL"] = f"s3://{bucket}/tokenizers/missing.json"
    failed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode != 0, "a missing tokenizer must fail the pod's start, not the build later"
