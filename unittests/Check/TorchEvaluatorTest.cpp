//===- TorchEvaluatorTest.cpp - tests of the LibTorch evaluator -----------===//
//
// Evaluates the example training steps with LibTorch: check cases from their
// headers, float32 against float64, the graphs' own gradients against LibTorch
// autograd of their loss, the optimizer updates, forward losses against
// independent torch expressions; also the public type helpers, dead ops, and
// diagnostics for what the evaluator cannot evaluate. The op-by-op tests are in
// the Eval*Test.cpp files and TorchMlirFormsTest.cpp (EvaluatorTest.h).
//
//===----------------------------------------------------------------------===//

#include "EvaluatorTest.h"

using namespace mlir;
using namespace mlir::gacc::torch_eval_test;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::vector<std::string> listFixtures() {
  std::vector<std::string> names;
  for (const auto &entry :
       std::filesystem::directory_iterator(GACC_EXAMPLES_DIR))
    if (entry.path().extension() == ".mlir")
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool argHas(func::FuncOp f, unsigned i, gacc::Role role) {
  return gacc::getArgumentRole(f, i).role == role;
}

/// The index a result with `role` carries (a grad's parameter, ...).
std::optional<int64_t> resultIndex(func::FuncOp f, unsigned j,
                                   gacc::Role role) {
  gacc::RoleInfo info = gacc::getResultRole(f, j);
  if (info.role != role)
    return std::nullopt;
  return info.index;
}

int lossIndex(func::FuncOp f) {
  for (unsigned j = 0; j < f.getNumResults(); ++j)
    if (gacc::getResultRole(f, j).role == gacc::Role::Loss)
      return j;
  return -1;
}

/// Upper bounds (exclusive) of the integer batch inputs of the fixtures.
const std::map<std::string, int64_t> &integerBounds() {
  static const std::map<std::string, int64_t> bounds = {
      {"mlp.mlir", 3},            // class labels
      {"lm_head_masked.mlir", 5}, // target token ids
  };
  return bounds;
}

/// Random inputs for a fixture, in the dtypes of the graph: parameters and
/// batch floats normal, state uniform positive (learning rate, Adam second
/// moment), integer batch inputs in range, masks 0/1.
std::vector<Tensor> makeInputs(func::FuncOp func, const std::string &name,
                               uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<Tensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    Type type = func.getArgumentTypes()[i];
    auto dtype = gacc::getTorchElementDType(type);
    auto shape = gacc::getTorchShape(type);
    EXPECT_TRUE(dtype && shape) << name << " argument #" << i;
    if (!dtype || !shape)
      return {};
    std::vector<int64_t> sizes(shape->begin(), shape->end());
    Tensor t;
    if (!torch::isFloatingType(*dtype)) {
      auto it = integerBounds().find(name);
      EXPECT_NE(it, integerBounds().end())
          << name << ": no range known for integer argument #" << i;
      if (it == integerBounds().end())
        return {};
      t = torch::randint(0, it->second, sizes, torch::kLong).to(*dtype);
    } else if (argHas(func, i, gacc::Role::State)) {
      t = torch::rand(sizes, torch::kDouble) * 0.5 + 0.05;
    } else if (argHas(func, i, gacc::Role::Param)) {
      t = torch::randn(sizes, torch::kDouble) * 0.5;
    } else {
      t = torch::randn(sizes, torch::kDouble);
    }
    if (name == "lm_head_masked.mlir" && i == 3) { // padding mask
      t = torch::bernoulli(torch::full(sizes, 0.7, torch::kDouble));
      t.index_put_({0, 0}, 1.0);
    }
    if (name == "adamw_clip.mlir" && i == 5) // steps already taken
      t = torch::full(sizes, 3.0, torch::kDouble);
    args.push_back(t.to(*dtype));
  }
  return args;
}

/// `args` with every floating-point tensor in float64 (exact conversion).
std::vector<Tensor> toFloat64(ArrayRef<Tensor> args) {
  std::vector<Tensor> out;
  for (const Tensor &t : args)
    out.push_back(torch::isFloatingType(t.scalar_type()) ? t.to(torch::kDouble)
                                                         : t);
  return out;
}

//===----------------------------------------------------------------------===//
// Check cases from the fixtures' headers
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, LinearRegressionCheckCase) {
  func::FuncOp f = loadExample("linear_regression.mlir");
  ASSERT_TRUE(f);
  for (auto computeType : {torch::kFloat64, torch::kFloat32}) {
    auto dtype = computeType;
    Tensor w = torch::zeros({}, dtype);
    Tensor x = torch::tensor({1.0, 2.0, 3.0, 4.0}, dtype);
    Tensor y = 2 * x;
    std::vector<Tensor> r = evaluate(f, {w, x, y}, computeType);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].dim(), 0);
    EXPECT_EQ(r[0].scalar_type(), dtype);
    EXPECT_DOUBLE_EQ(r[0].item<double>(), 30.0);
    EXPECT_DOUBLE_EQ(r[1].item<double>(), -30.0);
  }
}

TEST_F(EvaluatorTest, BadBackwardCheckCase) {
  func::FuncOp f = loadExample("bad_backward.mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor({1.0, 2.0, 3.0, 4.0}, torch::kDouble);
  std::vector<Tensor> r = evaluate(
      f, {torch::zeros({}, torch::kDouble), x, 2 * x}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].item<double>(), 30.0);
  EXPECT_DOUBLE_EQ(r[1].item<double>(), -15.0);
}

TEST_F(EvaluatorTest, Bf16LinearCheckCase) {
  func::FuncOp f = loadExample("bf16_linear.mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor(
      {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {1.0, 1.0, 1.0}});
  Tensor y = torch::tensor({1.0, 2.0, 3.0, 4.0});
  for (auto computeType : {torch::kFloat32, torch::kFloat64}) {
    // In float32 mode the graph computes in bf16 (its own type).
    auto dtype =
        computeType == torch::kFloat32 ? torch::kBFloat16 : torch::kFloat64;
    std::vector<Tensor> r = evaluate(
        f, {torch::zeros({3}, dtype), x.to(dtype), y.to(dtype)}, computeType);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].scalar_type(), dtype);
    EXPECT_EQ(r[1].scalar_type(), dtype);
    EXPECT_DOUBLE_EQ(r[0].item<double>(), 7.5);
    EXPECT_TRUE(torch::equal(r[1].to(torch::kDouble),
                             torch::tensor({-2.5, -3.0, -3.5}, torch::kDouble)))
        << r[1];
  }
}

//===----------------------------------------------------------------------===//
// Every fixture: float32 vs float64, graph gradients vs autograd
//===----------------------------------------------------------------------===//

class FixtureTest : public EvaluatorTest,
                    public ::testing::WithParamInterface<std::string> {};

TEST(FixtureList, KnownFixturesArePresent) {
  std::vector<std::string> names = listFixtures();
  for (const char *name :
       {"linear_regression.mlir", "bad_backward.mlir", "mlp.mlir",
        "lm_head_masked.mlir", "batchnorm.mlir", "tied_weights.mlir",
        "adamw_clip.mlir", "bf16_linear.mlir"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

TEST_P(FixtureTest, Float32AgreesWithFloat64) {
  const std::string &name = GetParam();
  func::FuncOp f = loadExample(name);
  ASSERT_TRUE(f) << name;
  for (uint64_t seed : {1, 2, 3}) {
    std::vector<Tensor> args = makeInputs(f, name, seed);
    ASSERT_EQ(args.size(), f.getNumArguments());
    std::vector<Tensor> r32 = evaluate(f, args, torch::kFloat32);
    std::vector<Tensor> r64 = evaluate(f, toFloat64(args), torch::kFloat64);
    ASSERT_EQ(r32.size(), f.getNumResults());
    ASSERT_EQ(r64.size(), f.getNumResults());
    bool bf16 = name == "bf16_linear.mlir";
    for (unsigned j = 0; j < f.getNumResults(); ++j) {
      EXPECT_TRUE(torch::isfinite(r64[j].to(torch::kDouble)).all().item<bool>())
          << name << " result #" << j;
      EXPECT_TRUE(torch::isfinite(r32[j].to(torch::kDouble)).all().item<bool>())
          << name << " result #" << j;
      if (!torch::isFloatingType(r64[j].scalar_type())) {
        EXPECT_TRUE(torch::equal(r32[j], r64[j])) << name << " result #" << j;
        continue;
      }
      EXPECT_EQ(r64[j].scalar_type(), torch::kDouble);
      // The bf16 graph computes in bf16 in float32 mode: only its check case
      // is compared exactly (Bf16LinearCheckCase).
      if (bf16)
        continue;
      EXPECT_LE(relError(r32[j], r64[j]), 1e-4)
          << name << " result #" << j << " seed " << seed << "\nf32:\n"
          << r32[j] << "\nf64:\n"
          << r64[j];
    }
  }
}

/// Evaluates `f` in float64 with the parameters requiring grad; returns the
/// results and the autograd gradients of the loss w.r.t. each argument
/// (undefined for non-parameters).
void evaluateWithAutograd(func::FuncOp f, std::vector<Tensor> args,
                          std::vector<Tensor> &results,
                          std::vector<Tensor> &grads) {
  std::vector<Tensor> params;
  std::vector<unsigned> paramIndices;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    if (!argHas(f, i, gacc::Role::Param))
      continue;
    args[i] = args[i].detach().clone().requires_grad_(true);
    params.push_back(args[i]);
    paramIndices.push_back(i);
  }
  results = evaluate(f, args, torch::kFloat64);
  int loss = lossIndex(f);
  ASSERT_GE(loss, 0);
  ASSERT_FALSE(params.empty());
  ASSERT_EQ(results.size(), f.getNumResults());
  std::vector<Tensor> g = torch::autograd::grad(
      {results[loss]}, params, /*grad_outputs=*/{}, /*retain_graph=*/false,
      /*create_graph=*/false, /*allow_unused=*/true);
  grads.assign(f.getNumArguments(), Tensor());
  for (auto [k, i] : llvm::enumerate(paramIndices))
    grads[i] = g[k].defined() ? g[k] : torch::zeros_like(params[k]);
}

TEST_P(FixtureTest, GraphGradientsMatchAutograd) {
  const std::string &name = GetParam();
  func::FuncOp f = loadExample(name);
  ASSERT_TRUE(f) << name;
  for (uint64_t seed : {11, 12}) {
    std::vector<Tensor> args = toFloat64(makeInputs(f, name, seed));
    ASSERT_EQ(args.size(), f.getNumArguments());
    std::vector<Tensor> results, grads;
    evaluateWithAutograd(f, args, results, grads);
    ASSERT_FALSE(results.empty());
    unsigned numGrads = 0;
    for (unsigned j = 0; j < f.getNumResults(); ++j) {
      std::optional<int64_t> param = resultIndex(f, j, gacc::Role::Grad);
      if (!param)
        continue;
      ++numGrads;
      ASSERT_TRUE(grads[*param].defined());
      double err = relError(results[j], grads[*param]);
      if (name == "bad_backward.mlir") {
        // The deliberately wrong backward returns half the gradient.
        EXPECT_GT(err, 0.1) << "the checker must see the wrong gradient";
        EXPECT_LE(relError(2 * results[j], grads[*param]), 1e-8);
      } else {
        EXPECT_LE(err, 1e-8) << name << " result #" << j << "\ngraph:\n"
                             << results[j] << "\nautograd:\n"
                             << grads[*param];
      }
    }
    bool expectsGrads = name != "mlp.mlir" && name != "adamw_clip.mlir";
    EXPECT_EQ(numGrads > 0, expectsGrads) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, FixtureTest,
                         ::testing::ValuesIn(listFixtures()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           std::string s =
                               info.param.substr(0, info.param.find('.'));
                           for (char &c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return s;
                         });

//===----------------------------------------------------------------------===//
// Optimizers inside the graph: param_out from the autograd gradient
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, MlpSgdUpdateMatchesAutograd) {
  func::FuncOp f = loadExample("mlp.mlir");
  ASSERT_TRUE(f);
  for (uint64_t seed : {21, 22}) {
    std::vector<Tensor> args = toFloat64(makeInputs(f, "mlp.mlir", seed));
    std::vector<Tensor> results, grads;
    evaluateWithAutograd(f, args, results, grads);
    ASSERT_FALSE(results.empty());
    int lrIndex = -1;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (argHas(f, i, gacc::Role::State))
        lrIndex = i;
    ASSERT_GE(lrIndex, 0);
    Tensor lr = args[lrIndex];
    unsigned numOut = 0;
    for (unsigned j = 0; j < f.getNumResults(); ++j) {
      std::optional<int64_t> p = resultIndex(f, j, gacc::Role::ParamOut);
      if (!p)
        continue;
      ++numOut;
      Tensor expected = args[*p] - lr * grads[*p];
      EXPECT_LE(relError(results[j], expected), 1e-8) << "result #" << j;
      // The update is not trivially zero.
      EXPECT_GT(relError(results[j], args[*p]), 1e-6) << "result #" << j;
    }
    EXPECT_EQ(numOut, 4u);
  }
}

TEST_F(EvaluatorTest, AdamWUpdateMatchesAutograd) {
  func::FuncOp f = loadExample("adamw_clip.mlir");
  ASSERT_TRUE(f);
  std::vector<Tensor> args = toFloat64(makeInputs(f, "adamw_clip.mlir", 31));
  // Large inputs, so that clipping is active in one of the two evaluations.
  for (double scale : {1.0, 100.0}) {
    std::vector<Tensor> scaled = args;
    scaled[1] = args[1] * scale;
    std::vector<Tensor> results, grads;
    evaluateWithAutograd(f, scaled, results, grads);
    ASSERT_EQ(results.size(), 5u);
    // The graph's constants are float32: use the same values.
    auto c = [](double v) {
      return static_cast<double>(static_cast<float>(v));
    };
    Tensor g = grads[0];
    Tensor norm = g.pow(2).sum().sqrt();
    Tensor gc =
        g * torch::minimum(c(1.0) / (norm + c(1e-6)), torch::ones_like(norm));
    Tensor t = scaled[5] + 1.0;
    Tensor m = c(0.9) * scaled[3] + c(0.1) * gc;
    Tensor v = c(0.999) * scaled[4] + c(0.001) * gc * gc;
    Tensor bc1 = 1.0 - torch::pow(c(0.9), t);
    Tensor bc2 = 1.0 - torch::pow(c(0.999), t);
    Tensor w = scaled[0] * c(0.9999) -
               (c(0.01) / bc1) * m / (v.sqrt() / bc2.sqrt() + c(1e-8));
    EXPECT_LE(relError(results[1], w), 1e-10) << results[1] << w;
    EXPECT_LE(relError(results[2], m), 1e-10);
    EXPECT_LE(relError(results[3], v), 1e-10);
    EXPECT_DOUBLE_EQ(results[4].item<double>(), 4.0);
    if (scale > 1.0) {
      EXPECT_GT(norm.item<double>(), 1.0) << "clipping should be active";
    }
  }
}

//===----------------------------------------------------------------------===//
// Forward losses against independent torch expressions
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, ForwardLossesMatchTorchExpressions) {
  namespace F = torch::nn::functional;
  auto lossOf = [&](const std::string &name, uint64_t seed,
                    std::vector<Tensor> &a) {
    func::FuncOp f = loadExample(name);
    EXPECT_TRUE(f) << name;
    if (!f)
      return Tensor();
    a = toFloat64(makeInputs(f, name, seed));
    std::vector<Tensor> r = evaluate(f, a, torch::kFloat64);
    int loss = lossIndex(f);
    return r.empty() || loss < 0 ? Tensor() : r[loss];
  };
  std::vector<Tensor> a;
  Tensor loss;

  for (const char *name : {"linear_regression.mlir", "bad_backward.mlir"}) {
    loss = lossOf(name, 41, a);
    ASSERT_TRUE(loss.defined());
    EXPECT_LE(relError(loss, (a[0] * a[1] - a[2]).pow(2).mean()), 1e-12);
  }

  loss = lossOf("mlp.mlir", 42, a);
  ASSERT_TRUE(loss.defined());
  {
    Tensor h = torch::relu(a[4].matmul(a[0]) + a[1]);
    Tensor logits = h.matmul(a[2]) + a[3];
    Tensor expected = F::nll_loss(F::log_softmax(logits, 1), a[5]);
    EXPECT_LE(relError(loss, expected), 1e-12);
  }

  loss = lossOf("lm_head_masked.mlir", 43, a);
  ASSERT_TRUE(loss.defined());
  {
    Tensor logp = F::log_softmax(a[1].matmul(a[0]), 2);
    Tensor nll = -logp.gather(2, a[2].unsqueeze(2)).squeeze(2);
    Tensor expected = (a[3] * nll).sum() / a[3].sum();
    EXPECT_LE(relError(loss, expected), 1e-12);
  }

  loss = lossOf("batchnorm.mlir", 44, a);
  ASSERT_TRUE(loss.defined());
  {
    Tensor z = a[1].matmul(a[0]);
    Tensor expected = (z - z.mean(0, true) - a[2]).pow(2).sum() / 4.0;
    EXPECT_LE(relError(loss, expected), 1e-12);
  }

  loss = lossOf("tied_weights.mlir", 45, a);
  ASSERT_TRUE(loss.defined());
  {
    Tensor xr = a[1].matmul(a[0]).matmul(a[0].t());
    EXPECT_LE(relError(loss, (xr - a[1]).pow(2).sum() / 4.0), 1e-12);
  }

  loss = lossOf("adamw_clip.mlir", 46, a);
  ASSERT_TRUE(loss.defined());
  EXPECT_LE(relError(loss, (a[1].matmul(a[0]) - a[2]).pow(2).mean()), 1e-12);

  loss = lossOf("bf16_linear.mlir", 47, a);
  ASSERT_TRUE(loss.defined());
  EXPECT_LE(relError(loss, (a[1].matmul(a[0]) - a[2]).pow(2).mean()), 1e-12);
}

//===----------------------------------------------------------------------===//
// Type helpers and dead ops
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, TypeHelpers) {
  Builder b(context.get());
  EXPECT_EQ(gacc::getTorchDType(b.getF32Type()), torch::kFloat);
  EXPECT_EQ(gacc::getTorchDType(b.getBF16Type()), torch::kBFloat16);
  EXPECT_EQ(gacc::getTorchDType(b.getBF16Type(), torch::kFloat64),
            torch::kDouble);
  EXPECT_EQ(gacc::getTorchDType(b.getIndexType()), torch::kLong);
  EXPECT_EQ(gacc::getTorchDType(b.getI1Type()), torch::kBool);
  EXPECT_EQ(gacc::getTorchDType(b.getIntegerType(3)), std::nullopt);
  auto type = RankedTensorType::get({4, 3}, b.getBF16Type());
  EXPECT_EQ(gacc::getTorchElementDType(type), torch::kBFloat16);
  EXPECT_EQ(*gacc::getTorchShape(type), SmallVector<int64_t>({4, 3}));
  EXPECT_TRUE(gacc::getTorchShape(b.getF32Type())->empty());
  EXPECT_EQ(gacc::getMlirElementType(torch::kBFloat16, context.get()),
            b.getBF16Type());
  Tensor t = torch::zeros({4, 3}, torch::kBFloat16);
  EXPECT_EQ(gacc::getMlirTensorType(t, context.get()), type);
  EXPECT_TRUE(gacc::matchesType(t, type));
  EXPECT_FALSE(gacc::matchesType(t, type, torch::kFloat64));
  EXPECT_TRUE(gacc::matchesType(
      torch::zeros({7, 3}, torch::kBFloat16),
      RankedTensorType::get({ShapedType::kDynamic, 3}, b.getBF16Type())));
}

// Dead ops (results unused, no side effects) are not evaluated, even when
// they could not be; unused results of a live linalg op are skipped when the
// evaluator cannot compute them.
TEST_F(EvaluatorTest, DeadOpsAreSkipped) {
  func::FuncOp f = parse(R"mlir(
func.func @dead(%x: tensor<4xf32>, %i: tensor<4xi32>) -> tensor<4xf32> {
  %c9 = arith.constant 9 : index
  %bad = tensor.extract %x[%c9] : tensor<4xf32>
  %ct, %hi = arith.mului_extended %i, %i : tensor<4xi32>
  %e = tensor.empty() : tensor<4xf32>
  %dl = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                         affine_map<(d0) -> (d0)>],
                        iterator_types = ["parallel"]}
      ins(%ct : tensor<4xi32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %c, %h = arith.mului_extended %a, %a : i32
    %f = arith.sitofp %c : i32 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  %sq = arith.mulf %x, %x : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      outs(%e : tensor<4xf32>) {
  ^bb0(%o: f32):
    %k = linalg.index 0 : index
    %v = tensor.extract %sq[%k] : tensor<4xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor({1.0f, -2.0f, 3.0f, 0.5f});
  Tensor i = torch::ones({4}, torch::kInt);
  std::vector<Tensor> r = evaluate(f, {x, i}, torch::kFloat32);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(torch::equal(r[0], x * x));
  // The same on two ranks in lockstep.
  FailureOr<SmallVector<SmallVector<Tensor>>> ranks =
      gacc::evaluateWithTorchOnRanks(f, {{x, i}, {2 * x, i}}, torch::kFloat32);
  ASSERT_TRUE(succeeded(ranks));
  EXPECT_TRUE(torch::equal((*ranks)[1][0], 4 * x * x));
}

//===----------------------------------------------------------------------===//
// What cannot be evaluated gives a diagnostic, never a number
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, UnsupportedOpsAreErrors) {
  struct Case {
    const char *source;
    const char *opName;
    const char *reason;
  };
  const Case cases[] = {
      // An op the evaluator does not know, at function level.
      {R"mlir(
func.func @f(%a: tensor<4xi64>) -> tensor<4xi64> {
  %r, %h = arith.mului_extended %a, %a : tensor<4xi64>
  return %h : tensor<4xi64>
})mlir",
       "arith.mului_extended", "wider than 32 bits is not supported"},
      // ... and inside a payload.
      {R"mlir(
func.func @f(%a: tensor<4xi64>) -> tensor<4xi64> {
  %e = tensor.empty() : tensor<4xi64>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%a : tensor<4xi64>) outs(%e : tensor<4xi64>) {
  ^bb0(%x: i64, %o: i64):
    %c, %h = arith.mulsi_extended %x, %x : i64
    linalg.yield %h : i64
  } -> tensor<4xi64>
  return %r : tensor<4xi64>
})mlir",
       "arith.mulsi_extended", "wider than 32 bits is not supported"},
      // A reduction whose combiner is not associative.
      {R"mlir(
func.func @f(%a: tensor<4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%a : tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.subf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
})mlir",
       "linalg.generic", "COMBINER(output, value)"},
      // The accumulated value used by something else than the combiner.
      {R"mlir(
func.func @f(%a: tensor<4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%a : tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %t = arith.mulf %acc, %x : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
})mlir",
       "linalg.generic", "reduced output other than in its combiner"},
      // An out-of-bounds extract.
      {R"mlir(
func.func @f(%a: tensor<4xf32>, %i: index) -> f32 {
  %r = tensor.extract %a[%i] : tensor<4xf32>
  return %r : f32
})mlir",
       "tensor.extract", "out of bounds"},
  };
  for (const Case &c : cases) {
    func::FuncOp f = parse(c.source);
    ASSERT_TRUE(f) << c.source;
    std::vector<Tensor> args;
    for (Type type : f.getArgumentTypes()) {
      auto shape = *gacc::getTorchShape(type);
      args.push_back(
          torch::full(std::vector<int64_t>(shape.begin(), shape.end()), 4,
                      *gacc::getTorchElementDType(type)));
    }
    std::string diag = evaluateExpectingFailure(f, args, torch::kFloat32);
    EXPECT_NE(diag.find(std::string("cannot evaluate '") + c.opName +
                        "' with LibTorch: "),
              std::string::npos)
        << diag;
    EXPECT_NE(diag.find(c.reason), std::string::npos) << diag;
  }
}

TEST_F(EvaluatorTest, BadArgumentsAreErrors) {
  func::FuncOp f = loadExample("linear_regression.mlir");
  ASSERT_TRUE(f);
  Tensor w = torch::zeros({});
  std::string diag = evaluateExpectingFailure(
      f, {w, torch::zeros({5}), torch::zeros({4})}, torch::kFloat32);
  EXPECT_NE(diag.find("argument #1 has shape [5]"), std::string::npos) << diag;
  diag = evaluateExpectingFailure(f, {w, torch::zeros({4})}, torch::kFloat32);
  EXPECT_NE(diag.find("3 arguments"), std::string::npos) << diag;
  diag = evaluateExpectingFailure(
      f, {w, torch::zeros({4}, torch::kLong), torch::zeros({4})},
      torch::kFloat32);
  EXPECT_NE(diag.find("argument #1 has dtype"), std::string::npos) << diag;
  diag = evaluateExpectingFailure(f, {w, torch::zeros({4}), torch::zeros({4})},
                                  torch::kFloat16);
  EXPECT_NE(diag.find("compute type"), std::string::npos) << diag;
  // Float arguments of another float dtype are converted.
  std::vector<Tensor> r =
      evaluate(f,
               {w.to(torch::kDouble), torch::ones({4}, torch::kDouble),
                torch::ones({4})},
               torch::kFloat32);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].scalar_type(), torch::kFloat);
  EXPECT_EQ(r[0].item<float>(), 1.0f);
}

} // namespace
