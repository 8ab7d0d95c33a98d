// Conversions between Python objects and lumen values.
#include <nanobind/stl/string.h>

#include <mutex>
#include <unordered_map>

#include "bindings.h"

namespace lumen::python {

namespace {

std::mutex registry_mutex;
std::unordered_map<const Graph*, std::weak_ptr<Graph>>& registry() {
  static auto* r = new std::unordered_map<const Graph*, std::weak_ptr<Graph>>();
  return *r;
}

bool is_type(const nb::dlpack::dtype& t, nb::dlpack::dtype_code code, int bits) {
  return t.code == static_cast<uint8_t>(code) && t.bits == bits && t.lanes == 1;
}

// The lumen dtype with the same memory layout as `t`, if any.
bool same_layout(const nb::dlpack::dtype& t, DType d) {
  using C = nb::dlpack::dtype_code;
  switch (d) {
    case DType::F32: return is_type(t, C::Float, 32);
    case DType::F16: return is_type(t, C::Float, 16);
    case DType::BF16: return is_type(t, C::Bfloat, 16);
    case DType::I32: return is_type(t, C::Int, 32);
    case DType::Bool: return is_type(t, C::Bool, 8) || is_type(t, C::UInt, 8);
    case DType::I8: return is_type(t, C::Int, 8);
    case DType::U8: return is_type(t, C::UInt, 8);
    case DType::I64: return is_type(t, C::Int, 64);
    case DType::F64: return is_type(t, C::Float, 64);
  }
  return false;
}

// Reads element `offset` (in elements) of a DLPack buffer exactly (integers as int64).
Scalar read_element(const void* data, int64_t offset, const nb::dlpack::dtype& t, const std::string& what) {
  using C = nb::dlpack::dtype_code;
  const auto* bytes = static_cast<const char*>(data);
  auto at = [&](size_t size) { return bytes + offset * static_cast<int64_t>(size); };
  if (is_type(t, C::Float, 32)) return Scalar::of_float(*reinterpret_cast<const float*>(at(4)));
  if (is_type(t, C::Float, 64)) return Scalar::of_float(*reinterpret_cast<const double*>(at(8)));
  if (is_type(t, C::Float, 16)) return Scalar::of_float(half_to_float(*reinterpret_cast<const uint16_t*>(at(2))));
  if (is_type(t, C::Bfloat, 16)) return Scalar::of_float(bf16_to_float(*reinterpret_cast<const uint16_t*>(at(2))));
  if (is_type(t, C::Int, 32)) return Scalar::of_int(*reinterpret_cast<const int32_t*>(at(4)));
  if (is_type(t, C::Int, 64)) return Scalar::of_int(*reinterpret_cast<const int64_t*>(at(8)));
  if (is_type(t, C::Int, 16)) return Scalar::of_int(*reinterpret_cast<const int16_t*>(at(2)));
  if (is_type(t, C::Int, 8)) return Scalar::of_int(*reinterpret_cast<const int8_t*>(at(1)));
  if (is_type(t, C::UInt, 8) || is_type(t, C::Bool, 8)) return Scalar::of_int(*reinterpret_cast<const uint8_t*>(at(1)));
  fail(what, ": unsupported array dtype (code ", int(t.code), ", ", int(t.bits), " bits)");
}

// An integer input refuses values it cannot hold rather than narrowing them.
void check_fits(const Scalar& v, DType want, const std::string& what) {
  if (want != DType::I32 && want != DType::I64) return;
  double d = v.to_double();
  bool whole = v.integral || (std::isfinite(d) && d == std::trunc(d));
  bool fits = want == DType::I64 ? (v.integral || (d >= -0x1p63 && d < 0x1p63))
                                 : (v.to_int() >= INT32_MIN && v.to_int() <= INT32_MAX && d >= -0x1p31 && d < 0x1p31);
  if (!whole || !fits) {
    if (v.integral) fail(what, ": value ", v.i, " does not fit the input's ", dtype_name(want), " dtype");
    fail(what, ": value ", d, " does not fit the input's ", dtype_name(want), " dtype");
  }
}

}  // namespace

void register_graph(const std::shared_ptr<Graph>& graph) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto& r = registry();
  for (auto it = r.begin(); it != r.end();) it = it->second.expired() ? r.erase(it) : std::next(it);
  r[graph.get()] = graph;
}

std::shared_ptr<Graph> graph_owner(const Graph* graph) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry().find(graph);
  return it == registry().end() ? nullptr : it->second.lock();
}

Shape shape_from_python(Graph& g, const nb::handle& seq) {
  Shape shape;
  if (nb::isinstance<nb::int_>(seq)) return {Expr(nb::cast<int64_t>(seq))};
  for (nb::handle item : seq) {
    if (nb::isinstance<nb::str>(item)) {
      shape.push_back(g.dim(nb::cast<std::string>(item)));
    } else if (nb::isinstance<Expr>(item)) {
      shape.push_back(nb::cast<Expr>(item));
    } else {
      shape.push_back(Expr(nb::cast<int64_t>(item)));
    }
  }
  return shape;
}

nb::object shape_to_python(const Shape& shape) {
  nb::list out;
  for (const Expr& d : shape) {
    if (d.is_const()) {
      out.append(nb::int_(d.value()));
    } else {
      out.append(nb::cast(d));
    }
  }
  return nb::tuple(out);
}

Array array_from_python(const nb::handle& obj, DType want, const std::string& what) {
  nb::ndarray<nb::ro> arr;
  if (!nb::try_cast(obj, arr)) {
    // Python scalars and nested lists: go through numpy.
    nb::object np = nb::module_::import_("numpy");
    nb::object converted = np.attr("asarray")(obj);
    if (!nb::try_cast(converted, arr)) fail(what, ": expected an array (numpy, DLPack or a nested list)");
  }
  if (arr.device_type() != nb::device::cpu::value) fail(what, ": the array is not in host memory");
  std::vector<int64_t> shape;
  for (size_t d = 0; d < arr.ndim(); ++d) shape.push_back(static_cast<int64_t>(arr.shape(d)));
  bool contiguous = true;
  int64_t expected = 1;
  for (size_t d = arr.ndim(); d-- > 0;) {
    if (arr.shape(d) != 1 && arr.stride(d) != expected) contiguous = false;
    expected *= static_cast<int64_t>(arr.shape(d));
  }
  if (contiguous && same_layout(arr.dtype(), want)) {  // zero copy: keep the Python object alive
    auto* keep = new nb::object(nb::borrow(obj));
    std::shared_ptr<void> owner(keep, [](void* p) {
      nb::gil_scoped_acquire gil;
      delete static_cast<nb::object*>(p);
    });
    return Array::borrow(const_cast<void*>(arr.data()), want, shape, owner);
  }
  Array out(want, shape);
  std::vector<int64_t> idx(arr.ndim(), 0);
  for (int64_t f = 0; f < out.numel(); ++f) {
    int64_t offset = 0;
    for (size_t d = 0; d < arr.ndim(); ++d) offset += idx[d] * arr.stride(d);
    Scalar v = read_element(arr.data(), offset, arr.dtype(), what);
    check_fits(v, want, what);
    out.store(f, v);
    for (size_t d = arr.ndim(); d-- > 0;) {
      if (++idx[d] < static_cast<int64_t>(arr.shape(d))) break;
      idx[d] = 0;
    }
  }
  return out;
}

nb::object array_to_dlpack(const Array& a) {
  nb::dlpack::dtype dtype;
  switch (a.dtype()) {
    case DType::F32: dtype = nb::dtype<float>(); break;
    case DType::F16: dtype = {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1}; break;
    case DType::BF16: dtype = {static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1}; break;
    case DType::I32: dtype = nb::dtype<int32_t>(); break;
    case DType::Bool: dtype = nb::dtype<bool>(); break;
    case DType::I8: dtype = nb::dtype<int8_t>(); break;
    case DType::U8: dtype = nb::dtype<uint8_t>(); break;
    case DType::I64: dtype = nb::dtype<int64_t>(); break;
    case DType::F64: dtype = nb::dtype<double>(); break;
  }
  auto* keep = new Array(a);  // the capsule holds a reference: the program does not reuse this buffer while it lives
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Array*>(p); });
  std::vector<size_t> shape;
  for (int64_t d : a.shape()) shape.push_back(static_cast<size_t>(d));
  nb::ndarray<> out(keep->data(), shape.size(), shape.data(), owner, nullptr, dtype);
  return nb::cast(out);
}

nb::object array_to_python(const Array& a) {
  Array view = a;
  nb::dlpack::dtype dtype;
  switch (a.dtype()) {
    case DType::F32: dtype = nb::dtype<float>(); break;
    case DType::F16: dtype = {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1}; break;
    case DType::I32: dtype = nb::dtype<int32_t>(); break;
    case DType::Bool: dtype = nb::dtype<bool>(); break;
    case DType::I8: dtype = nb::dtype<int8_t>(); break;
    case DType::U8: dtype = nb::dtype<uint8_t>(); break;
    case DType::I64: dtype = nb::dtype<int64_t>(); break;
    case DType::F64: dtype = nb::dtype<double>(); break;
    case DType::BF16: {  // numpy has no bfloat16: hand out float32 values
      Array f(DType::F32, a.shape());
      for (int64_t i = 0; i < a.numel(); ++i) f.set(i, a.get(i));
      view = f;
      dtype = nb::dtype<float>();
      break;
    }
  }
  auto* keep = new Array(view);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Array*>(p); });
  std::vector<size_t> shape;
  for (int64_t d : view.shape()) shape.push_back(static_cast<size_t>(d));
  nb::ndarray<nb::numpy> out(keep->data(), shape.size(), shape.data(), owner, nullptr, dtype);
  return nb::cast(out);
}

}  // namespace lumen::python
