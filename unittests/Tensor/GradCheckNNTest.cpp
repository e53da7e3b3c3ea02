// Gradient checks of movement ops, indexing, the nn layers (pooling, convolution, matmul,
// normalization, attention, losses, dropout) and OPT=5's convolution layouts, by central finite
// differences in float64 on both devices (the harness: GradCheck.h).
#include "GradCheck.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

std::vector<GradCase> movementCases() {
  return {
      {"reshape with -1", {in({2, 6}, 401)}, FN(return x[0].reshape({3, -1, 2});)},
      {"expand with -1", {in({3, 1}, 402)}, FN(return x[0].expand({-1, 4});)},
      {"expand a new leading size-1 dim", {in({1, 3}, 403)}, FN(return x[0].expand({4, 3});)},
      {"permute with a negative axis", {in({2, 3, 4}, 404)}, FN(return x[0].permute({-1, 0, 1});)},
      {"flip one axis", {in({2, 3, 4}, 405)}, FN(return x[0].flip({-1});)},
      {"flip two axes", {in({2, 3, 4}, 406)}, FN(return x[0].flip({0, 2});)},
      {"shrink with an unset dim", {in({4, 5}, 407)}, FN(return x[0].shrink({std::nullopt, SIntPair(1, 4)});)},
      {"pad", {in({2, 3}, 408)}, FN(return x[0].pad(pads({{0, 1}, {2, 0}}));)},
      {"pad with a value", {in({2, 3}, 409)}, FN(return x[0].pad(pads({{1, 1}, {0, 2}}), 1.5);)},
      {"pad2d", {in({2, 2, 3}, 410)}, FN(return x[0].pad2d({1, 0, 2, 1});)},
      {"pad2d with a value", {in({2, 3}, 411)}, FN(return x[0].pad2d({0, 2}, -2);)},
      {"slice past both ends", {in({3, 4}, 412)}, FN(return x[0].slice(pads({{-1, 2}, {1, 6}}));)},
      {"slice with a value", {in({3, 4}, 413)}, FN(return x[0].slice(pads({{1, 5}, {-2, 3}}), 0.5);)},
      {"getitem [1]", {in({3, 4, 3}, 414)}, FN(return x[0].getitem({Index::at(1)});)},
      {"getitem [-1, :, 0]", {in({3, 4, 3}, 415)},
       FN(return x[0].getitem({Index::at(-1), Index::all(), Index::at(0)});)},
      {"getitem [:, ::2]", {in({3, 4, 3}, 416)},
       FN(return x[0].getitem({Index::all(), Index::range(std::nullopt, std::nullopt, 2)});)},
      {"getitem [::-1]", {in({3, 4, 3}, 417)},
       FN(return x[0].getitem({Index::range(std::nullopt, std::nullopt, -1)});)},
      {"getitem [::-2, 1:3]", {in({3, 4, 3}, 418)},
       FN(return x[0].getitem({Index::range(std::nullopt, std::nullopt, -2), Index::range(1, 3)});)},
      {"getitem [2:0:-1, -3:, ::3]", {in({3, 4, 3}, 419)},
       FN(return x[0].getitem({Index::range(2, 0, -1), Index::range(-3, std::nullopt),
                               Index::range(std::nullopt, std::nullopt, 3)});)},
      {"getitem [None, ..., 1]", {in({3, 4, 3}, 420)},
       FN(return x[0].getitem({Index::newAxis(), Index::ellipsis(), Index::at(1)});)},
      {"getitem [..., None, ::-3]", {in({3, 4, 4}, 421)},
       FN(return x[0].getitem({Index::ellipsis(), Index::newAxis(), Index::range(std::nullopt, std::nullopt, -3)});)},
      {"getitem [1:, None, ::-2, 2]", {in({3, 4, 3}, 422)},
       FN(return x[0].getitem(
                  {Index::range(1, std::nullopt), Index::newAxis(), Index::range(std::nullopt, std::nullopt, -2),
                   Index::at(2)});)},
      {"getitem [idx] with a repeated and a negative index", {in({3, 4, 3}, 423)},
       FN(return x[0].getitem(ints({2, 0, -1, 2}, {4}, dev));)},
      {"getitem [:, idx2d]", {in({3, 4, 3}, 424)},
       FN(auto idx = [](const Vals &v, const Ints &s, const std::string &d) { return Index::of(ints(v, s, d)); };
          return x[0].getitem({Index::all(), idx({0, 3, 1, 1}, {2, 2}, dev)});)},
      {"getitem [idx0, :, idx2] (non-adjacent tensor indices)", {in({3, 4, 3}, 425)},
       FN(auto idx = [](const Vals &v, const Ints &s, const std::string &d) { return Index::of(ints(v, s, d)); };
          return x[0].getitem({idx({0, 2, 2}, {3}, dev), Index::all(), idx({1, -1, 0}, {3}, dev)});)},
      {"getitem [:, idx1, idx2] (adjacent tensor indices)", {in({3, 4, 3}, 426)},
       FN(auto idx = [](const Vals &v, const Ints &s, const std::string &d) { return Index::of(ints(v, s, d)); };
          return x[0].getitem({Index::all(), idx({3, 0}, {2}, dev), idx({2, 2}, {2}, dev)});)},
      {"getitem [1, idx, ::-1] (int, tensor and a negative step)", {in({3, 4, 3}, 427)},
       FN(auto idx = [](const Vals &v, const Ints &s, const std::string &d) { return Index::of(ints(v, s, d)); };
          return x[0].getitem({Index::at(1), idx({1, 1, 3}, {3}, dev), Index::range(std::nullopt, std::nullopt, -1)});)},
      {"gather dim 0 (repeated indices)", {in({3, 4}, 428)},
       FN(return x[0].gather(ints({2, 0, 1, 2, 0, 0, 2, 1}, {2, 4}, dev), 0);)},
      {"gather dim 1", {in({3, 4}, 429)}, FN(return x[0].gather(ints({3, 0, 1, 1, 2, 3}, {3, 2}, dev), 1);)},
      {"gather dim -1 of 3-d", {in({2, 2, 3}, 430)},
       FN(return x[0].gather(ints({2, 2, 0, 1, 0, 0, 1, 2}, {2, 2, 2}, dev), -1);)},
      {"cat dim 0", {in({2, 3}, 431), in({1, 3}, 432), in({3, 3}, 433)}, FN(return x[0].cat({x[1], x[2]}, 0);)},
      {"cat dim 1", {in({2, 1}, 434), in({2, 3}, 435)}, FN(return x[0].cat({x[1]}, 1);)},
      {"cat dim -1 of 3-d", {in({2, 2, 1}, 436), in({2, 2, 2}, 437)}, FN(return x[0].cat({x[1]}, -1);)},
      {"stack dim 0", {in({2, 3}, 438), in({2, 3}, 439), in({2, 3}, 440)},
       FN(return Tensor::stack({x[0], x[1], x[2]}, 0);)},
      {"stack dim -1", {in({2, 3}, 441), in({2, 3}, 442)}, FN(return Tensor::stack({x[0], x[1]}, -1);)},
      {"repeat", {in({2, 3}, 443)}, FN(return x[0].repeat({2, 1, 2});)},
      {"squeeze all", {in({1, 3, 1, 2}, 444)}, FN(return x[0].squeeze();)},
      {"squeeze dim", {in({1, 3, 1, 2}, 445)}, FN(return x[0].squeeze(2);)},
      {"unsqueeze", {in({3, 2}, 446)}, FN(return x[0].unsqueeze(1);)},
      {"unsqueeze -1", {in({3, 2}, 447)}, FN(return x[0].unsqueeze(-1);)},
      {"transpose", {in({3, 2}, 448)}, FN(return x[0].transpose();)},
      {"transpose (0, 2)", {in({2, 3, 4}, 449)}, FN(return x[0].transpose(0, 2);)},
      {"T", {in({3, 2}, 450)}, FN(return x[0].T();)},
      {"flatten", {in({2, 3, 2}, 451)}, FN(return x[0].flatten();)},
      {"flatten(1)", {in({2, 3, 2}, 452)}, FN(return x[0].flatten(1);)},
      {"chunk", {in({2, 5}, 453)}, FN(return x[0].chunk(2, 1)[1];)},
      {"triu", {in({3, 4}, 454)}, FN(return x[0].triu();)},
      {"triu k=1", {in({3, 4}, 455)}, FN(return x[0].triu(1);)},
      {"tril", {in({3, 4}, 456)}, FN(return x[0].tril();)},
      {"tril k=-1", {in({2, 3, 3}, 457)}, FN(return x[0].tril(-1);)},
  };
}

std::vector<GradCase> nnCases() {
  return {
      {"avgPool2d 2x2", {in({1, 2, 4, 4}, 501)}, FN(return x[0].avgPool2d();)},
      {"avgPool2d 3x2 stride (1, 2)", {in({1, 2, 4, 4}, 502)},
       FN(return x[0].avgPool2d({3, 2}, std::vector<int64_t>{1, 2});)},
      {"avgPool2d 2x2 stride 1 dilation 2", {in({1, 1, 5, 5}, 503)},
       FN(return x[0].avgPool2d({2, 2}, std::vector<int64_t>{1, 1}, {2});)},
      {"maxPool2d 2x2", {in({1, 2, 4, 4}, 504)}, FN(return x[0].maxPool2d();)},
      {"maxPool2d 3x3 stride 2 (overlapping)", {in({1, 1, 5, 5}, 505)},
       FN(return x[0].maxPool2d({3, 3}, std::vector<int64_t>{2, 2});)},
      {"maxPool2d 2x2 stride 1 dilation 2", {in({1, 1, 5, 5}, 506)},
       FN(return x[0].maxPool2d({2, 2}, std::vector<int64_t>{1, 1}, {2});)},
      {"conv2d with bias", {in({1, 2, 4, 4}, 507), in({2, 2, 3, 3}, 508), in({2}, 509)},
       FN(return x[0].conv2d(x[1], x[2]);)},
      {"conv2d stride 2 padding 1", {in({1, 2, 5, 5}, 510), in({2, 2, 3, 3}, 511)},
       FN(return x[0].conv2d(x[1], std::nullopt, 1, {2}, {1}, {1});)},
      {"conv2d dilation 2", {in({1, 1, 5, 5}, 512), in({2, 1, 2, 2}, 513), in({2}, 514)},
       FN(return x[0].conv2d(x[1], x[2], 1, {1}, {2});)},
      {"conv2d groups 2", {in({2, 4, 3, 3}, 515), in({4, 2, 2, 2}, 516), in({4}, 517)},
       FN(return x[0].conv2d(x[1], x[2], 2);)},
      {"conv2d asymmetric padding, stride (2, 1)", {in({1, 1, 4, 3}, 518), in({2, 1, 2, 3}, 519)},
       FN(return x[0].conv2d(x[1], std::nullopt, 1, {2, 1}, {1}, {1, 0, 2, 1});)},
      {"conv2d 1-d (N, C, L)", {in({2, 2, 5}, 520), in({3, 2, 2}, 521), in({3}, 522)},
       FN(return x[0].conv2d(x[1], x[2]);)},
      {"convTranspose2d with bias", {in({1, 2, 3, 3}, 523), in({2, 2, 2, 2}, 524), in({2}, 525)},
       FN(return x[0].convTranspose2d(x[1], x[2]);)},
      {"convTranspose2d stride 2 padding 1 output padding 1", {in({1, 2, 3, 3}, 526), in({2, 1, 3, 3}, 527)},
       FN(return x[0].convTranspose2d(x[1], std::nullopt, 1, {2}, {1}, {1}, {1});)},
      {"convTranspose2d groups 2", {in({1, 4, 2, 2}, 528), in({4, 1, 2, 2}, 529), in({2}, 530)},
       FN(return x[0].convTranspose2d(x[1], x[2], 2);)},
      {"convTranspose2d dilation 2", {in({1, 1, 3, 3}, 531), in({1, 2, 2, 2}, 532)},
       FN(return x[0].convTranspose2d(x[1], std::nullopt, 1, {1}, {2});)},
      {"dot: 1-d . 1-d", {in({4}, 533), in({4}, 534)}, FN(return x[0].dot(x[1]);)},
      {"dot: 1-d . 2-d", {in({3}, 535), in({3, 2}, 536)}, FN(return x[0].dot(x[1]);)},
      {"dot: 2-d . 1-d", {in({2, 3}, 537), in({3}, 538)}, FN(return x[0].dot(x[1]);)},
      {"matmul: 2-d @ 2-d", {in({2, 3}, 539), in({3, 4}, 540)}, FN(return x[0].matmul(x[1]);)},
      {"matmul: batched", {in({2, 2, 3}, 541), in({2, 3, 2}, 542)}, FN(return x[0].matmul(x[1]);)},
      {"matmul: batched @ 2-d (broadcast)", {in({2, 2, 3}, 543), in({3, 2}, 544)}, FN(return x[0].matmul(x[1]);)},
      {"matmul: batch dims 1 and 2 (broadcast)", {in({1, 2, 3}, 545), in({2, 3, 2}, 546)},
       FN(return x[0].matmul(x[1]);)},
      {"matmul: 1-d @ batched", {in({3}, 547), in({2, 3, 2}, 548)}, FN(return x[0].matmul(x[1]);)},
      {"linear with bias", {in({2, 3}, 549), in({3, 4}, 550), in({4}, 551)}, FN(return x[0].linear(x[1], x[2]);)},
      {"linear without bias", {in({2, 3}, 552), in({3, 2}, 553)}, FN(return x[0].linear(x[1]);)},
      {"linear with a 1-d weight", {in({2, 3}, 554), in({3}, 555), in({3}, 556)},
       FN(return x[0].linear(x[1], x[2]);)},
      {"layernorm last axis", {in({3, 4}, 557)}, FN(return x[0].layernorm();)},
      {"layernorm two axes, eps 1e-3", {in({2, 2, 3}, 558)}, FN(return x[0].layernorm({-2, -1}, 1e-3);)},
      {"batchnorm (given mean and invstd)",
       {in({2, 3, 2, 2}, 559), in({3}, 560), in({3}, 561), in({3}, 562), in({3}, 563, 0.5, 2)},
       FN(return x[0].batchnorm(x[1], x[2], x[3], x[4]);)},
      {"batchnorm without affine", {in({2, 2, 2, 1}, 564), in({2}, 565), in({2}, 566, 0.5, 2)},
       FN(return x[0].batchnorm(std::nullopt, std::nullopt, x[1], x[2]);)},
      {"batchnorm with batch statistics (nn::BatchNorm2d, training)", {in({3, 2, 2, 2}, 567), in({2}, 568),
                                                                       in({2}, 569)},
       FN(Tensor::TrainingGuard tg;
          nn::BatchNorm2d bn(2, 1e-5, true, false); // no running statistics (on the default device)
          bn.weight = x[1];
          bn.bias = x[2];
          return bn(x[0]);)},
      {"scaledDotProductAttention", {in({2, 3, 4}, 570), in({2, 3, 4}, 571), in({2, 3, 2}, 572)},
       FN(return x[0].scaledDotProductAttention(x[1], x[2]);)},
      {"scaledDotProductAttention with a float mask (also differentiated)",
       {in({2, 3, 4}, 573), in({2, 2, 4}, 574), in({2, 2, 2}, 575), in({3, 2}, 576)},
       FN(return x[0].scaledDotProductAttention(x[1], x[2], x[3]);)},
      {"scaledDotProductAttention with a bool mask", {in({1, 3, 4}, 577), in({1, 3, 4}, 578), in({1, 3, 2}, 579)},
       FN(return x[0].scaledDotProductAttention(x[1], x[2], bools({1, 0, 1, 0, 1, 1, 1, 0, 0}, {3, 3}, dev));)},
      {"scaledDotProductAttention causal", {in({2, 3, 4}, 580), in({2, 3, 4}, 581), in({2, 3, 2}, 582)},
       FN(return x[0].scaledDotProductAttention(x[1], x[2], std::nullopt, 0, true);)},
      {"binaryCrossentropy (both operands)", {in({2, 3}, 583, 0.05, 0.95), in({2, 3}, 584, 0, 1)},
       FN(return x[0].binaryCrossentropy(x[1]);)},
      {"binaryCrossentropyLogits (both operands)", {in({2, 3}, 585, -3, 3, {0}), in({2, 3}, 586, 0, 1)},
       FN(return x[0].binaryCrossentropyLogits(x[1]);)},
      {"sparseCategoricalCrossentropy", {in({4, 5}, 587)},
       FN(return x[0].sparseCategoricalCrossentropy(ints({1, 4, 0, 4}, {4}, dev));)},
      {"sparseCategoricalCrossentropy with ignored labels", {in({4, 5}, 588)},
       FN(return x[0].sparseCategoricalCrossentropy(ints({1, -1, 3, 2}, {4}, dev));)},
      {"sparseCategoricalCrossentropy ignoreIndex 2, 3-d logits", {in({2, 2, 3}, 589)},
       FN(return x[0].sparseCategoricalCrossentropy(ints({0, 2, 1, 1}, {2, 2}, dev), 2);)},
      {"dropout (training, fixed seed)", {in({3, 4}, 590)},
       FN(Tensor::TrainingGuard tg;
          Tensor::manualSeed(4242);
          return x[0].dropout(0.3);)},
      {"dropout (training, fixed seed) after exp", {in({3, 4}, 591)},
       FN(Tensor::TrainingGuard tg;
          Tensor::manualSeed(777);
          return x[0].exp().dropout(0.5);)},
  };
}

/// The convolutions of nnCases() and a few more, for OPT=5, where a convolution computes its input's
/// gradient as one transposed convolution when its padding is the same on both sides of each
/// dimension, and its weight's as one reduction over the output's gradient written out
/// channels-last when it has one group (ConvGradient, TensorConv.cpp); the other gradients come
/// through the pooling op's graph, as at OPT=2. With 64 or more multiply-adds per input element
/// (output channels per group x the window) a padded input is written out first, so the
/// convolution itself has no padding, unless the CPU reads it through the masks as fast (AVX-512,
/// a window up to 5 wide, the same padding on both sides; the cases below with fewer
/// multiply-adds take that graph on every host).
std::vector<GradCase> convCasesAtOpt5() {
  std::vector<GradCase> out;
  for (GradCase c : nnCases()) {
    if (c.name.rfind("conv", 0) != 0) continue;
    c.gradFn = "ConvGradient"; // (every one has a gradient to compute directly)
    out.push_back(std::move(c));
  }
  std::vector<GradCase> more{
      {"conv2d stride 2 padding 1 (one row and column reached by no window)",
       {in({1, 2, 6, 6}, 601), in({3, 2, 3, 3}, 602), in({3}, 603)},
       FN(return x[0].conv2d(x[1], x[2], 1, {2}, {1}, {1});),
       "ConvGradient"},
      {"conv2d stride 2 dilation 2 padding 2", {in({1, 1, 7, 7}, 604), in({2, 1, 2, 2}, 605)},
       FN(return x[0].conv2d(x[1], std::nullopt, 1, {2}, {2}, {2});),
       "ConvGradient"},
      {"conv2d groups 2 stride (2, 1) padding (1, 0)", {in({2, 4, 5, 4}, 606), in({4, 2, 3, 2}, 607)},
       FN(return x[0].conv2d(x[1], std::nullopt, 2, {2, 1}, {1}, {1, 0});),
       "ConvGradient"},
      {"conv2d 3-d (N, C, D, H, W) padding 1", {in({1, 2, 3, 3, 3}, 608), in({2, 2, 2, 2, 2}, 609)},
       FN(return x[0].conv2d(x[1], std::nullopt, 1, {1}, {1}, {1});),
       "ConvGradient"},
      {"conv2d after exp (the input is computed)", {in({1, 2, 4, 4}, 610, -1, 1), in({2, 2, 3, 3}, 611)},
       FN(return x[0].exp().conv2d(x[1]);),
       "ConvGradient"},
      {"conv2d padding 1, 8 output channels (the padded input written out first, or read through masks)",
       {in({1, 2, 4, 4}, 617), in({8, 2, 3, 3}, 618), in({8}, 619)},
       FN(return x[0].conv2d(x[1], x[2], 1, {1}, {1}, {1});),
       "ConvGradient"},
      {"conv2d groups 2, asymmetric padding, 16 output channels (the padded input written out first on any CPU)",
       {in({1, 4, 4, 3}, 620), in({16, 2, 3, 3}, 621)},
       FN(return x[0].conv2d(x[1], std::nullopt, 2, {1}, {1}, {1, 0, 2, 1});),
       "ConvGradient"},
      {"conv2d groups 2, asymmetric padding (both gradients through the pooling op)",
       {in({1, 4, 4, 3}, 612), in({2, 2, 2, 2}, 613), in({2}, 614)},
       FN(return x[0].conv2d(x[1], x[2], 2, {1}, {1}, {1, 0, 0, 1});)},
      {"conv2d with the weight computed, 3x1 kernel stride (1, 2)", {in({2, 3, 5, 6}, 615), in({4, 3, 3, 1}, 616, -1, 1)},
       FN(return x[0].conv2d(x[1].exp(), std::nullopt, 1, {1, 2});),
       "ConvGradient"},
  };
  for (GradCase &c : more) out.push_back(std::move(c));
  return out;
}

} // namespace

TEST_CASE("GradCheck: movement, indexing, gather, cat/stack and triangles match finite differences") {
  runAll(movementCases());
}

TEST_CASE("GradCheck: pooling, convolution, matmul, normalization, attention, losses and dropout "
          "match finite differences") {
  runAll(nnCases());
}

TEST_CASE("GradCheck: at OPT=5 convolutions, their input gradients one transposed convolution, match finite "
          "differences") {
  Config cfg = config();
  cfg.opt = 5;
  ScopedConfig scope(cfg);
  runAll(convCasesAtOpt5());
}


TEST_CASE("GradCheck: the two-stage cumsum passes the reversed cumulative sum of the weights") {
  // d/dx_j sum_i w_i cumsum(x)_i = sum_{i >= j} w_i, for every one of the 600 elements
  const size_t n = 600;
  Vals xv = randVals(n, 951), w = randVals(n, 952, -1, 1);
  Vals expected(n);
  double acc = 0;
  for (size_t j = n; j-- > 0;) expected[j] = acc += w[j];
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor t = make(xv, {static_cast<int64_t>(n)}, dev, f64).setRequiresGrad(true);
    t.cumsum().mul(make(w, {static_cast<int64_t>(n)}, dev, f64)).sum().backward();
    expectValues(*t.grad(), {static_cast<int64_t>(n)}, expected, {1e-12, 1e-12});
  }
}
