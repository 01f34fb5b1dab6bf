package clientgo

// What the test writes through the apiserver: the corpus (kubectl apply),
// then churn with client-go's typed clients.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// corpusDir is testkit/corpus (HERALD_CORPUS_DIR overrides it).
func corpusDir(t *testing.T) string {
	if d := os.Getenv("HERALD_CORPUS_DIR"); d != "" {
		return d
	}
	d, err := filepath.Abs("../corpus")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// applyCorpus applies corpus.yaml, waits for its CRD, then applies
// widgets.yaml (retried while the apiserver's discovery catches up with the
// new group).
func applyCorpus(ctx context.Context, t *testing.T, c *cluster) {
	t.Helper()
	dir := corpusDir(t)
	for _, f := range []string{"corpus.yaml", "widgets.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("the corpus: %v", err)
		}
	}
	out, errOut, err := c.kubectl(ctx, false, "apply", "-f", filepath.Join(dir, "corpus.yaml"))
	if err != nil {
		t.Fatalf("kubectl apply -f corpus.yaml: %v\n%s%s", err, out, errOut)
	}
	t.Logf("kubectl apply -f corpus.yaml:\n%s", strings.TrimSpace(out))
	out, errOut, err = c.kubectl(ctx, false, "wait", "--for=condition=established", "--timeout=60s", "crd/widgets.herald.dev")
	if err != nil {
		t.Fatalf("kubectl wait crd/widgets.herald.dev: %v\n%s%s", err, out, errOut)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, errOut, err = c.kubectl(ctx, false, "apply", "-f", filepath.Join(dir, "widgets.yaml"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl apply -f widgets.yaml: %v\n%s%s", err, out, errOut)
		}
		time.Sleep(time.Second)
	}
	t.Logf("kubectl apply -f widgets.yaml:\n%s", strings.TrimSpace(out))
}

// ops counts the churn's writes and fails the test on the first error.
type ops struct {
	t *testing.T
	n int
}

func (o *ops) do(what string, err error) {
	o.t.Helper()
	if err != nil {
		o.t.Fatalf("churn: %s: %v", what, err)
	}
	o.n++
}

var (
	churnNodes = []string{"node-a", "node-b", "node-c", ""}
	churnApps  = []string{"api", "web", "batch"}
)

func churnPod(i int) *corev1.Pod {
	ns := []string{"churn-a", "churn-b"}[i%2]
	labels := map[string]string{
		"app":  churnApps[i%3],
		"tier": []string{"front", "back"}[i%2],
		"idx":  fmt.Sprint(i),
	}
	if i%5 == 0 {
		labels["canary"] = "true"
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%02d", i), Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: churnNodes[i%4],
			Containers: []corev1.Container{{
				Name:  "main",
				Image: fmt.Sprintf("registry.example/app:%d.%d", i%3, i),
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(8000 + i)}},
				Env:   []corev1.EnvVar{{Name: "INDEX", Value: fmt.Sprint(i)}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse(fmt.Sprintf("%dm", 50*(i+1))),
						corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", 16*(i+1))),
					},
				},
			}},
		},
	}
	if i%4 == 1 {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}
		p.Spec.Containers[0].Resources.Requests = p.Spec.Containers[0].Resources.Limits
	}
	return p
}

// runningStatus is a pod status as a kubelet would write it.
func runningStatus(p *corev1.Pod, i int, at time.Time) corev1.PodStatus {
	t := metav1.NewTime(at.Truncate(time.Second))
	ip := fmt.Sprintf("10.244.%d.%d", i%4, 10+i)
	return corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    "192.168.0.10",
		HostIPs:   []corev1.HostIP{{IP: "192.168.0.10"}},
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &t,
		QOSClass:  p.Status.QOSClass,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", Ready: true, RestartCount: int32(i % 3), Started: ptr.To(true),
			Image: p.Spec.Containers[0].Image, ImageID: "registry.example/app@sha256:" + strings.Repeat("ab", 32),
			ContainerID: fmt.Sprintf("containerd://%064d", i),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}},
	}
}

// churn writes about 90 changes across kinds: namespaces, nodes (with a
// status), 20 pods with varied labels and nodes (statuses, label updates,
// an immediate and a graceful delete), configmaps (one held by a
// finalizer while deleted), secrets, deployments, services, leases,
// events, RBAC and a dozen kinds the corpus lacks.
func churn(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	o := &ops{t: t}
	now := time.Now()
	for _, ns := range []string{"churn-a", "churn-b"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"churn": "yes"}}}, metav1.CreateOptions{})
		o.do("create namespace "+ns, err)
		// No controller-manager: the default service account is ours to make.
		_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		o.do("create serviceaccount "+ns+"/default", err)
	}

	for _, name := range []string{"node-b", "node-c"} {
		n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "zone": "z2"}},
			Spec:       corev1.NodeSpec{PodCIDR: "10.244.2.0/24", PodCIDRs: []string{"10.244.2.0/24"}},
		}, metav1.CreateOptions{})
		o.do("create node "+name, err)
		ts := metav1.NewTime(now.Truncate(time.Second))
		n.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16303412Ki"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m"), corev1.ResourceMemory: resource.MustParse("15Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: ts, LastTransitionTime: ts},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: ts, LastTransitionTime: ts},
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.11"}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", ContainerRuntimeVersion: "containerd://2.1.0", OSImage: "Debian GNU/Linux 13 (trixie)", KernelVersion: "6.12.0", OperatingSystem: "linux", Architecture: "amd64"},
		}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		o.do("update node status "+name, err)
	}

	// 20 pods.
	pods := make([]*corev1.Pod, 20)
	for i := range pods {
		p, err := cs.CoreV1().Pods(churnPod(i).Namespace).Create(ctx, churnPod(i), metav1.CreateOptions{})
		o.do("create pod "+churnPod(i).Name, err)
		pods[i] = p
	}
	for i := 0; i < 4; i++ { // statuses (pods on a node)
		p := pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		p.Status = runningStatus(p, i, now)
		up, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		o.do("update pod status "+p.Name, err)
		pods[i] = up
	}
	for i := 4; i < 9; i++ { // label updates
		p := pods[i]
		p.Labels["tier"] = "middle"
		p.Labels["updated"] = fmt.Sprint(i)
		up, err := cs.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{})
		o.do("update pod labels "+p.Name, err)
		pods[i] = up
	}
	// p-09 is on node-b: deleted with the default grace it stays, terminating.
	o.do("delete pod p-09 (graceful)", cs.CoreV1().Pods(pods[9].Namespace).Delete(ctx, "p-09", metav1.DeleteOptions{}))
	o.do("delete pod p-10 (grace 0)", cs.CoreV1().Pods(pods[10].Namespace).Delete(ctx, "p-10", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	o.do("delete pod p-11 (unscheduled)", cs.CoreV1().Pods(pods[11].Namespace).Delete(ctx, "p-11", metav1.DeleteOptions{}))

	// ConfigMaps.
	for i := 0; i < 6; i++ {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: []string{"churn-a", "churn-b"}[i%2], Labels: map[string]string{"app": churnApps[i%3]}},
			Data:       map[string]string{"i": fmt.Sprint(i), "text": "line one\nline \"two\"\t<tab>\n"},
		}
		if i == 4 {
			cm.Finalizers = []string{"herald.dev/hold"}
		}
		_, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		o.do("create configmap "+cm.Name, err)
	}
	for i := 0; i < 3; i++ {
		ns := []string{"churn-a", "churn-b"}[i%2]
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, fmt.Sprintf("cm-%d", i), metav1.GetOptions{})
		o.do("get configmap", err)
		cm.Data["updated"] = now.Format(time.RFC3339Nano)
		cm.Labels["rev"] = "2"
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		o.do("update configmap "+cm.Name, err)
	}
	o.do("delete configmap cm-3", cs.CoreV1().ConfigMaps("churn-b").Delete(ctx, "cm-3", metav1.DeleteOptions{}))
	o.do("delete configmap cm-4 (finalizer holds it)", cs.CoreV1().ConfigMaps("churn-a").Delete(ctx, "cm-4", metav1.DeleteOptions{}))

	// Secrets (encrypted at rest when the run encrypts).
	_, err := cs.CoreV1().Secrets("churn-a").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s-0", Namespace: "churn-a"},
		Type:       corev1.SecretTypeOpaque, Data: map[string][]byte{"k": {0, 1, 2, 255}, "utf8": []byte("héllo")},
	}, metav1.CreateOptions{})
	o.do("create secret s-0", err)
	_, err = cs.CoreV1().Secrets("churn-b").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s-1", Namespace: "churn-b"},
		Type:       corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "u", "password": "p@ss"},
	}, metav1.CreateOptions{})
	o.do("create secret s-1", err)
	s0, err := cs.CoreV1().Secrets("churn-a").Get(ctx, "s-0", metav1.GetOptions{})
	o.do("get secret s-0", err)
	s0.Data["more"] = []byte("x")
	_, err = cs.CoreV1().Secrets("churn-a").Update(ctx, s0, metav1.UpdateOptions{})
	o.do("update secret s-0", err)

	// Deployments (no controller-manager: they stay as written).
	for i := 0; i < 3; i++ {
		labels := map[string]string{"app": fmt.Sprintf("d-%d", i)}
		_, err := cs.AppsV1().Deployments("churn-a").Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("d-%d", i), Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(i + 1)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
				},
			},
		}, metav1.CreateOptions{})
		o.do(fmt.Sprintf("create deployment d-%d", i), err)
	}
	d0, err := cs.AppsV1().Deployments("churn-a").Get(ctx, "d-0", metav1.GetOptions{})
	o.do("get deployment d-0", err)
	d0.Spec.Replicas = ptr.To(int32(5))
	_, err = cs.AppsV1().Deployments("churn-a").Update(ctx, d0, metav1.UpdateOptions{})
	o.do("scale deployment d-0", err)
	d1, err := cs.AppsV1().Deployments("churn-a").Get(ctx, "d-1", metav1.GetOptions{})
	o.do("get deployment d-1", err)
	d1.Status = appsv1.DeploymentStatus{ObservedGeneration: d1.Generation, Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, AvailableReplicas: 1, UnavailableReplicas: 1}
	_, err = cs.AppsV1().Deployments("churn-a").UpdateStatus(ctx, d1, metav1.UpdateOptions{})
	o.do("update deployment status d-1", err)
	o.do("delete deployment d-2", cs.AppsV1().Deployments("churn-a").Delete(ctx, "d-2", metav1.DeleteOptions{}))

	// Services.
	_, err = cs.CoreV1().Services("churn-a").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-np"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "api"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	o.do("create service svc-np", err)
	_, err = cs.CoreV1().Services("churn-a").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-headless"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 5432}}},
	}, metav1.CreateOptions{})
	o.do("create service svc-headless", err)
	_, err = cs.CoreV1().Services("churn-b").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-ext"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
	}, metav1.CreateOptions{})
	o.do("create service svc-ext", err)
	_, err = cs.CoreV1().Services("churn-b").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-gone"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 81}}},
	}, metav1.CreateOptions{})
	o.do("create service svc-gone", err)
	o.do("delete service svc-gone", cs.CoreV1().Services("churn-b").Delete(ctx, "svc-gone", metav1.DeleteOptions{}))

	// Leases, events.
	lease, err := cs.CoordinationV1().Leases("churn-a").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l-0"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-b"), LeaseDurationSeconds: ptr.To(int32(40)),
			RenewTime: &metav1.MicroTime{Time: now}},
	}, metav1.CreateOptions{})
	o.do("create lease l-0", err)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(10 * time.Second)}
	_, err = cs.CoordinationV1().Leases("churn-a").Update(ctx, lease, metav1.UpdateOptions{})
	o.do("renew lease l-0", err)
	for i := 0; i < 2; i++ {
		ts := metav1.NewTime(now.Truncate(time.Second))
		_, err := cs.CoreV1().Events("churn-a").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("p-00.%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "churn-a", Name: "p-00", APIVersion: "v1"},
			Reason:         []string{"Pulled", "BackOff"}[i], Message: fmt.Sprintf("message %d", i),
			Type: []string{"Normal", "Warning"}[i], Count: int32(i + 1), FirstTimestamp: ts, LastTimestamp: ts,
			Source: corev1.EventSource{Component: "kubelet", Host: "node-a"},
		}, metav1.CreateOptions{})
		o.do("create event", err)
	}

	// RBAC.
	_, err = cs.RbacV1().Roles("churn-a").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "r-0"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{})
	o.do("create role r-0", err)
	cr, err := cs.RbacV1().ClusterRoles().Get(ctx, "herald-diff-viewer", metav1.GetOptions{})
	o.do("get clusterrole", err)
	cr.Labels = map[string]string{"touched": "yes"}
	_, err = cs.RbacV1().ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{})
	o.do("update clusterrole herald-diff-viewer", err)

	// Kinds the corpus lacks.
	_, err = cs.BatchV1().CronJobs("churn-a").Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", TimeZone: ptr.To("Europe/Paris"), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}},
		}}},
	}, metav1.CreateOptions{})
	o.do("create cronjob", err)
	_, err = cs.PolicyV1().PodDisruptionBudgets("churn-a").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("50%")), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}},
	}, metav1.CreateOptions{})
	o.do("create poddisruptionbudget", err)
	_, err = cs.AutoscalingV2().HorizontalPodAutoscalers("churn-a").Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d-0"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(70))}}}},
		},
	}, metav1.CreateOptions{})
	o.do("create horizontalpodautoscaler", err)
	pathType := networkingv1.PathTypePrefix
	_, err = cs.NetworkingV1().Ingresses("churn-a").Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "ing"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "app.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "svc-np", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}},
	}, metav1.CreateOptions{})
	o.do("create ingress", err)
	_, err = cs.NetworkingV1().NetworkPolicies("churn-a").Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{}, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}, metav1.CreateOptions{})
	o.do("create networkpolicy", err)
	_, err = cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-0"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: "fast",
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/pv-0"}}},
	}, metav1.CreateOptions{})
	o.do("create persistentvolume", err)
	_, err = cs.CoreV1().PersistentVolumeClaims("churn-a").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-0"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("fast"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{})
	o.do("create persistentvolumeclaim", err)
	_, err = cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "example.com/fast", Parameters: map[string]string{"tier": "ssd"},
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain), AllowVolumeExpansion: ptr.To(true),
	}, metav1.CreateOptions{})
	o.do("create storageclass", err)
	_, err = cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000000, Description: "high priority",
	}, metav1.CreateOptions{})
	o.do("create priorityclass", err)
	_, err = cs.CoreV1().ResourceQuotas("diff").Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "quota"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("50"), corev1.ResourceRequestsCPU: resource.MustParse("20")}},
	}, metav1.CreateOptions{})
	o.do("create resourcequota", err)
	_, err = cs.CoreV1().LimitRanges("diff").Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
	}, metav1.CreateOptions{})
	o.do("create limitrange", err)
	t.Logf("churn: %d writes through client-go", o.n)
}

// churnMore is the informers' round: pods created, relabelled (in and out
// of the label selector app=web), given statuses, deleted; configmaps and
// deployments created, updated, deleted.
func churnMore(ctx context.Context, t *testing.T, cs kubernetes.Interface, round int) {
	t.Helper()
	o := &ops{t: t}
	now := time.Now()
	for i := 0; i < 6; i++ {
		n := 100*round + i
		p := churnPod(n)
		p.Name = fmt.Sprintf("q%d-%02d", round, i)
		_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		o.do("create pod "+p.Name, err)
	}
	for _, ref := range [][2]string{{"churn-a", "p-00"}, {"churn-b", "p-01"}, {"churn-a", "p-04"}, {"churn-b", "p-13"}} {
		p, err := cs.CoreV1().Pods(ref[0]).Get(ctx, ref[1], metav1.GetOptions{})
		o.do("get pod "+ref[1], err)
		if p.Labels["app"] == "web" {
			p.Labels["app"] = "api"
		} else {
			p.Labels["app"] = "web"
		}
		p.Labels["round"] = fmt.Sprint(round)
		_, err = cs.CoreV1().Pods(ref[0]).Update(ctx, p, metav1.UpdateOptions{})
		o.do("relabel pod "+ref[1], err)
	}
	for _, ref := range [][2]string{{"churn-b", "p-05"}, {"churn-a", "p-06"}} {
		p, err := cs.CoreV1().Pods(ref[0]).Get(ctx, ref[1], metav1.GetOptions{})
		o.do("get pod "+ref[1], err)
		p.Status = runningStatus(p, round, now)
		_, err = cs.CoreV1().Pods(ref[0]).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		o.do("pod status "+ref[1], err)
	}
	zero := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	o.do("delete pod", cs.CoreV1().Pods("churn-a").Delete(ctx, fmt.Sprintf("q%d-00", round), zero))
	o.do("delete pod", cs.CoreV1().Pods("churn-a").Delete(ctx, fmt.Sprintf("p-%02d", 12+2*round), zero))
	o.do("delete pod", cs.CoreV1().Pods("churn-b").Delete(ctx, fmt.Sprintf("p-%02d", 13+2*round), zero))

	for i := 0; i < 3; i++ {
		_, err := cs.CoreV1().ConfigMaps("churn-b").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d-cm-%d", round, i), Labels: map[string]string{"app": "web"}},
			Data:       map[string]string{"round": fmt.Sprint(round)},
		}, metav1.CreateOptions{})
		o.do("create configmap", err)
	}
	cm, err := cs.CoreV1().ConfigMaps("churn-a").Get(ctx, "cm-0", metav1.GetOptions{})
	o.do("get configmap cm-0", err)
	cm.Data["round"] = fmt.Sprint(round)
	_, err = cs.CoreV1().ConfigMaps("churn-a").Update(ctx, cm, metav1.UpdateOptions{})
	o.do("update configmap cm-0", err)
	o.do("delete configmap", cs.CoreV1().ConfigMaps("churn-b").Delete(ctx, fmt.Sprintf("r%d-cm-1", round), metav1.DeleteOptions{}))

	d, err := cs.AppsV1().Deployments("churn-a").Get(ctx, "d-1", metav1.GetOptions{})
	o.do("get deployment d-1", err)
	d.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("nginx:1.%d", 27+round)
	_, err = cs.AppsV1().Deployments("churn-a").Update(ctx, d, metav1.UpdateOptions{})
	o.do("update deployment d-1", err)
	labels := map[string]string{"app": fmt.Sprintf("r%d", round)}
	_, err = cs.AppsV1().Deployments("churn-b").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d-dep", round), Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}},
	}, metav1.CreateOptions{})
	o.do("create deployment", err)
	if round == 1 {
		o.do("delete deployment d-0", cs.AppsV1().Deployments("churn-a").Delete(ctx, "d-0", metav1.DeleteOptions{}))
	}
	t.Logf("churn round %d: %d writes", round, o.n)
}
