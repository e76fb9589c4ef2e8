#include "pipeline/model/torch_weights.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "pipeline/quant/qmatrix.h"

namespace troupe {

TorchPlacement PlacementOf(const ResolvedBackend& backend) {
  TorchPlacement p;
  p.device = c10::Device(backend.device);
  p.dtype = backend.dtype == "bf16" ? c10::kBFloat16 : backend.dtype == "f16" ? c10::kHalf : c10::kFloat;
  return p;
}

at::Tensor TorchLinear::operator()(const at::Tensor& x) const {
  at::Tensor in = x.to(w.scalar_type());
  return b.defined() ? at::linear(in, w, b) : at::linear(in, w);
}

Result<at::Tensor> LoadTorchTensor(const ModelSource& source, const std::string& name,
                                   const std::vector<int64_t>& shape, c10::Device device, c10::ScalarType dtype) {
  TROUPE_ASSIGN_OR_RETURN(const TensorView* view, source.Require(name, shape));
  at::Tensor out;
  Status st = TorchGuard("loading '" + name + "' onto " + device.str(), [&]() -> Status {
    at::Tensor host = at::empty(shape, at::kFloat);
    dequantize(view->type, view->data, host.data_ptr<float>(), view->numel());
    out = host.to(device, dtype).contiguous();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<TorchLinear> LoadTorchLinear(const ModelSource& source, const std::vector<std::string>& names,
                                    const std::vector<int64_t>& rows, int64_t cols,
                                    const std::vector<std::string>& biases, const TorchPlacement& place) {
  std::vector<at::Tensor> ws, bs;
  for (size_t i = 0; i < names.size(); ++i) {
    TROUPE_ASSIGN_OR_RETURN(at::Tensor w,
                            LoadTorchTensor(source, names[i], {rows[i], cols}, place.device, place.dtype));
    ws.push_back(std::move(w));
    if (!biases.empty()) {
      TROUPE_ASSIGN_OR_RETURN(at::Tensor b, LoadTorchTensor(source, biases[i], {rows[i]}, place.device, place.dtype));
      bs.push_back(std::move(b));
    }
  }
  TorchLinear l;
  if (ws.size() == 1) {
    l.w = std::move(ws[0]);
    if (!bs.empty()) l.b = std::move(bs[0]);
    return l;
  }
  Status st = TorchGuard("fusing " + names[0] + " on " + place.device.str(), [&]() -> Status {
    l.w = at::cat(ws);  // the parts are freed when ws goes
    if (!bs.empty()) l.b = at::cat(bs);
    return Status::Ok();
  });
  TROUPE_RETURN_IF_ERROR(st);
  return l;
}

at::Tensor TorchRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
}

Status TorchGuard(const std::string& what, const std::function<Status()>& body) {
  try {
    return body();
  } catch (const c10::OutOfMemoryError& e) {
    std::string m = e.what_without_backtrace();
    return Status::ResourceExhausted(what + ": out of device memory: " + m.substr(0, 300));
  } catch (const c10::Error& e) {
    std::string m = e.what_without_backtrace();
    return Status::Internal(what + ": " + m.substr(0, 500));
  } catch (const std::exception& e) {
    std::string m = e.what();
    return Status::Internal(what + ": " + m.substr(0, 500));
  }
}

}  // namespace troupe
